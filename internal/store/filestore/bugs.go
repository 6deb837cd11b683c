package filestore

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
)

// bugStore is bugs/: one file per bug, the counter and the index
// (bugs.Store), one per store so the index stays in memory.
type bugStore struct {
	s *Store
	w *bugs.Store
}

func (b *bugStore) Open(_ context.Context, nb bugs.NewBug) (bugs.Opened, error) { return b.w.Open(nb) }

func (b *bugStore) Transition(_ context.Context, id, to, by, note string, at time.Time) (*bugs.Bug, bugs.Transition, error) {
	return b.w.Transition(id, to, by, note, at)
}

func (b *bugStore) List(_ context.Context, q bugs.Query) (bugs.Listing, error) { return b.w.List(q) }

func (b *bugStore) Get(_ context.Context, id string) (*bugs.Bug, error) {
	return bugs.Load(b.s.dir, id)
}

// Summaries reads the index as it is, never writing it (bugs.ReadIndex).
func (b *bugStore) Summaries(context.Context) ([]bugs.Summary, error) { return bugs.ReadIndex(b.s.dir) }

func (b *bugStore) Each(ctx context.Context, fn func(*bugs.Bug) error) ([]bugs.Unreadable, error) {
	all, bad, err := bugs.Scan(b.s.dir)
	if err != nil {
		return nil, err
	}
	for _, bug := range all {
		if err := ctx.Err(); err != nil {
			return bad, err
		}
		if err := fn(bug); err != nil {
			return bad, err
		}
	}
	return bad, nil
}
