package filestore

import (
	"context"

	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/store"
)

// timelineLog is timeline.ndjson and its rotated files.
type timelineLog struct {
	s *Store
	w journal.Timeline
}

// Append takes the next seq under the timeline's lock (journal.Timeline).
// A file append has no lost answer to retry, so no entry is looked up.
func (t *timelineLog) Append(_ context.Context, e store.TimelineEntry) (int64, error) {
	return t.w.Append(e)
}

func (t *timelineLog) Each(_ context.Context, fn func(store.TimelineEntry) error) (ndjson.BadLines, error) {
	return journal.ReadTimeline(t.s.root, ndjson.Options{}, func(e store.TimelineEntry, _ ndjson.Pos) error { return fn(e) })
}

func (t *timelineLog) Backward(_ context.Context, fn func(store.TimelineEntry) bool) (store.Cursor, error) {
	c, err := journal.BackwardTimeline(t.s.root, ndjson.Options{}, fn)
	return store.Cursor{File: &c}, err
}

func (t *timelineLog) Follow(ctx context.Context, from *store.Cursor, fn func(store.TimelineEntry, store.Cursor) error) error {
	return journal.FollowTimeline(ctx, t.s.root, t.s.followOptions(from), func(e store.TimelineEntry, next ndjson.Cursor) error {
		return fn(e, store.Cursor{File: &next})
	})
}

// eventsLog is .toolhost/events.ndjson and its rotated files.
type eventsLog struct {
	s *Store
	w journal.Events
}

func (e *eventsLog) Emit(_ context.Context, ev store.Event) error { return e.w.Emit(ev) }

func (e *eventsLog) Each(_ context.Context, fn func(store.Event) error) (ndjson.BadLines, error) {
	return journal.ReadEvents(e.s.root, ndjson.Options{}, func(ev store.Event, _ ndjson.Pos) error { return fn(ev) })
}

func (e *eventsLog) Backward(_ context.Context, fn func(store.Event) bool) (store.Cursor, error) {
	c, err := journal.BackwardEvents(e.s.root, ndjson.Options{}, fn)
	return store.Cursor{File: &c}, err
}

func (e *eventsLog) Follow(ctx context.Context, from *store.Cursor, fn func(store.Event, store.Cursor) error) error {
	return journal.FollowEvents(ctx, e.s.root, e.s.followOptions(from), func(ev store.Event, next ndjson.Cursor) error {
		return fn(ev, store.Cursor{File: &next})
	})
}

// followOptions resumes after from (its file cursor) at the store's pace.
func (s *Store) followOptions(from *store.Cursor) ndjson.FollowOptions {
	o := ndjson.FollowOptions{Poll: s.o.Poll}
	if from != nil && from.File != nil {
		c := *from.File
		o.From = &c
	}
	return o
}

func (t *timelineLog) Lines(ctx context.Context, fn func([]byte) error) error {
	return t.s.lines(ctx, journal.TimelinePath, fn)
}

func (e *eventsLog) Lines(ctx context.Context, fn func([]byte) error) error {
	return e.s.lines(ctx, journal.EventsPath, fn)
}

// lines reads every line of a log across its rotated files.
func (s *Store) lines(ctx context.Context, rel string, fn func([]byte) error) error {
	r, err := ndjson.Open(s.root, rel, ndjson.Options{MaxLine: 1 << 20})
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r.Line()); err != nil {
			return err
		}
	}
	return r.Err()
}
