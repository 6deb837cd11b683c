package filestore

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/store"
)

// auditTrail is .toolhost/audit.ndjson, its rotated files and checkpoint.
// The sink is started on the first write (or Open), so a store opened to
// read never starts a writer.
type auditTrail struct {
	s *Store

	mu   sync.Mutex
	sink *audit.FileSink
}

func (a *auditTrail) writer() *audit.FileSink {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sink == nil {
		a.sink = audit.NewFileSink(a.s.door, audit.Options{Project: a.s.o.ProjectID, MaxBytes: a.s.o.AuditMaxBytes})
	}
	return a.sink
}

func (a *auditTrail) Write(r *audit.Row) error { return a.writer().Write(r) }

func (a *auditTrail) Open() error { return a.writer().Open() }

func (a *auditTrail) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sink == nil {
		return nil
	}
	return a.sink.Close()
}

// exists reports whether the project has a trail (any of its files).
func (a *auditTrail) exists() (bool, error) {
	segs, err := ndjson.Segments(a.s.root, audit.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return len(segs) > 0, err
}

func (a *auditTrail) EachLine(_ context.Context, f audit.Filter, fn func(*audit.Row, []byte) error) (ndjson.BadLines, error) {
	if ok, err := a.exists(); err != nil || !ok {
		return ndjson.BadLines{}, a.orNoTrail(err)
	}
	return audit.EachLine(a.s.dir, f, fn)
}

func (a *auditTrail) Stats(_ context.Context, f audit.Filter) ([]audit.ToolStats, ndjson.BadLines, error) {
	if ok, err := a.exists(); err != nil || !ok {
		return nil, ndjson.BadLines{}, a.orNoTrail(err)
	}
	return audit.StatsOf(a.s.dir, f)
}

func (a *auditTrail) Backward(_ context.Context, fn func(*audit.Row) bool) (store.Cursor, error) {
	c, err := audit.Backward(a.s.root, ndjson.Options{}, fn)
	return store.Cursor{File: &c}, err
}

func (a *auditTrail) Follow(ctx context.Context, from *store.Cursor, fn func(*audit.Row, store.Cursor) error) error {
	return audit.Follow(ctx, a.s.root, a.s.followOptions(from), func(r *audit.Row, next ndjson.Cursor) error {
		return fn(r, store.Cursor{File: &next})
	})
}

func (a *auditTrail) Verify(context.Context) (*audit.Verification, error) {
	if ok, err := a.exists(); err != nil || !ok {
		return nil, a.orNoTrail(err)
	}
	return audit.Verify(a.s.dir)
}

// Lines hands fn every line of every file of the trail, oldest file first,
// each with the path of its file.
func (a *auditTrail) Lines(ctx context.Context, fn func(file string, line []byte) error) error {
	if ok, err := a.exists(); err != nil || !ok {
		return a.orNoTrail(err)
	}
	r, err := ndjson.Open(a.s.root, audit.Path, ndjson.Options{MaxLine: 1 << 20})
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r.Segment().Path, r.Line()); err != nil {
			return err
		}
	}
	return r.Err()
}

func (a *auditTrail) orNoTrail(err error) error {
	if err != nil {
		return err
	}
	return &store.NoTrailError{Where: filepath.Join(a.s.dir, filepath.FromSlash(audit.Path))}
}
