package journal

import (
	"context"
	"encoding/json"
	"os"

	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/store"
)

// ReadTimeline streams the timeline's entries, oldest first, across its
// rotated files, in constant memory. A line that is not an entry is
// skipped and reported in the returned BadLines instead of failing the read.
func ReadTimeline(root *os.Root, o ndjson.Options, fn func(e store.TimelineEntry, at ndjson.Pos) error) (ndjson.BadLines, error) {
	return each(root, TimelinePath, o, decodeEntry, fn)
}

// ReadEvents streams the events, oldest first, across rotated files, like
// ReadTimeline.
func ReadEvents(root *os.Root, o ndjson.Options, fn func(e store.Event, at ndjson.Pos) error) (ndjson.BadLines, error) {
	return each(root, EventsPath, o, decodeEvent, fn)
}

func decodeEvent(line []byte) (store.Event, string) {
	var e store.Event
	if err := json.Unmarshal(line, &e); err != nil {
		return e, "not JSON"
	}
	if e.Kind == "" {
		return e, "no kind"
	}
	return e, ""
}

func decodeEntry(line []byte) (store.TimelineEntry, string) {
	var e store.TimelineEntry
	if err := json.Unmarshal(line, &e); err != nil {
		return e, "not JSON"
	}
	if e.Seq <= 0 {
		return e, "no seq"
	}
	return e, ""
}

func each[T any](root *os.Root, rel string, o ndjson.Options, decode func([]byte) (T, string), fn func(T, ndjson.Pos) error) (ndjson.BadLines, error) {
	r, err := ndjson.Open(root, rel, o)
	if err != nil {
		return ndjson.BadLines{}, err
	}
	defer r.Close()
	for r.Next() {
		v, bad := decode(r.Line())
		if bad != "" {
			r.Reject(bad)
			continue
		}
		if err := fn(v, r.Pos()); err != nil {
			return r.Bad(), err
		}
	}
	return r.Bad(), r.Err()
}

// FollowEvents delivers every event appended from o.From on (the end of
// the log when nil), across rotations, until ctx ends: the feed of a live
// view. Lines that are not events are passed over; next resumes after the
// event.
func FollowEvents(ctx context.Context, root *os.Root, o ndjson.FollowOptions, fn func(e store.Event, next ndjson.Cursor) error) error {
	return follow(ctx, root, EventsPath, o, decodeEvent, fn)
}

// FollowTimeline is FollowEvents for the timeline.
func FollowTimeline(ctx context.Context, root *os.Root, o ndjson.FollowOptions, fn func(e store.TimelineEntry, next ndjson.Cursor) error) error {
	return follow(ctx, root, TimelinePath, o, decodeEntry, fn)
}

func follow[T any](ctx context.Context, root *os.Root, rel string, o ndjson.FollowOptions, decode func([]byte) (T, string), fn func(T, ndjson.Cursor) error) error {
	return ndjson.Follow(ctx, root, rel, o, func(line []byte, next ndjson.Cursor) error {
		v, bad := decode(line)
		if bad != "" {
			return nil
		}
		return fn(v, next)
	})
}

// BackwardEvents hands fn the events newest first, across rotated files,
// reading from the end (ndjson.Backward), until fn returns false; it returns
// the cursor to follow from (FollowEvents) so nothing written meanwhile is
// lost or repeated. Lines that are not events are passed over.
func BackwardEvents(root *os.Root, o ndjson.Options, fn func(e store.Event) bool) (ndjson.Cursor, error) {
	return backward(root, EventsPath, o, decodeEvent, fn)
}

// BackwardTimeline is BackwardEvents for the timeline.
func BackwardTimeline(root *os.Root, o ndjson.Options, fn func(e store.TimelineEntry) bool) (ndjson.Cursor, error) {
	return backward(root, TimelinePath, o, decodeEntry, fn)
}

func backward[T any](root *os.Root, rel string, o ndjson.Options, decode func([]byte) (T, string), fn func(T) bool) (ndjson.Cursor, error) {
	return ndjson.Backward(root, rel, o, func(line []byte) bool {
		v, bad := decode(line)
		return bad != "" || fn(v)
	})
}
