package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
)

// Counts are how many records a Copy moved.
type Counts struct {
	Timeline      int `json:"timeline"`
	Events        int `json:"events"`
	AuditLines    int `json:"audit_lines"`
	Bugs          int `json:"bugs"`
	AgentStates   int `json:"agent_states"`
	Confirmations int `json:"confirmations"`
}

func (c Counts) String() string {
	return fmt.Sprintf("%d timeline entries, %d events, %d audit lines, %d bugs, %d agent states, %d confirmations",
		c.Timeline, c.Events, c.AuditLines, c.Bugs, c.AgentStates, c.Confirmations)
}

// Copy hands every record of src to dst, as stored: what `toolhost store
// export` and `store import` do. Unreadable bugs stop it: a copy that
// leaves a record behind is not a copy.
func Copy(ctx context.Context, src Store, dst Importer) (Counts, error) {
	var n Counts
	if err := src.Timeline().Lines(ctx, func(l []byte) error { n.Timeline++; return dst.TimelineLine(ctx, l) }); err != nil {
		return n, fmt.Errorf("timeline: %w", err)
	}
	if err := src.Events().Lines(ctx, func(l []byte) error { n.Events++; return dst.EventLine(ctx, l) }); err != nil {
		return n, fmt.Errorf("events: %w", err)
	}
	err := src.Audit().Lines(ctx, func(file string, l []byte) error { n.AuditLines++; return dst.AuditLine(ctx, file, l) })
	if err != nil && !errors.Is(err, ErrNoTrail) {
		return n, fmt.Errorf("audit trail: %w", err)
	}
	bad, err := src.Bugs().Each(ctx, func(b *bugs.Bug) error { n.Bugs++; return dst.Bug(ctx, b) })
	if err != nil {
		return n, fmt.Errorf("bugs: %w", err)
	}
	if len(bad) > 0 {
		return n, fmt.Errorf("bugs: %s cannot be read (%s); repair or remove it first", bad[0].ID, bad[0].Reason)
	}
	agents, err := src.Agents().Agents(ctx)
	if err != nil {
		return n, fmt.Errorf("agent states: %w", err)
	}
	for _, a := range agents {
		tl, err := src.Agents().Todolist(ctx, a)
		if err != nil {
			return n, fmt.Errorf("todolist of %s: %w", a, err)
		}
		if tl != nil {
			n.AgentStates++
			if err := dst.Todolist(ctx, a, tl); err != nil {
				return n, err
			}
		}
		rs, err := src.Agents().Runtime(ctx, a)
		if err != nil {
			return n, fmt.Errorf("runtime state of %s: %w", a, err)
		}
		if rs != nil {
			n.AgentStates++
			if err := dst.Runtime(ctx, a, rs); err != nil {
				return n, err
			}
		}
	}
	entries, err := src.Confirmations().List(ctx)
	if err != nil {
		return n, fmt.Errorf("confirmations: %w", err)
	}
	for _, e := range entries {
		n.Confirmations++
		if err := dst.Confirmation(ctx, e); err != nil {
			return n, err
		}
	}
	key, err := src.RequestStates().Key(ctx)
	if err != nil {
		return n, fmt.Errorf("request-state key: %w", err)
	}
	if err := dst.RequestStateKey(ctx, key); err != nil {
		return n, err
	}
	return n, dst.Done(ctx)
}

// Discard is an Importer that keeps nothing: Copy into it counts.
func Discard() Importer { return discard{} }

type discard struct{}

func (discard) TimelineLine(context.Context, []byte) error           { return nil }
func (discard) EventLine(context.Context, []byte) error              { return nil }
func (discard) AuditLine(context.Context, string, []byte) error      { return nil }
func (discard) Bug(context.Context, *bugs.Bug) error                 { return nil }
func (discard) Todolist(context.Context, string, *Todolist) error    { return nil }
func (discard) Runtime(context.Context, string, *RuntimeState) error { return nil }
func (discard) Confirmation(context.Context, *confirm.Entry) error   { return nil }
func (discard) RequestStateKey(context.Context, []byte) error        { return nil }
func (discard) Done(context.Context) error                           { return nil }
