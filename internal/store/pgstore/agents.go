package pgstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
)

// agentState is the agent_state table: one row per agent and kind (todo,
// runtime), its document and a version. An update reads the row, runs fn
// and writes the result only if the version is still the one read
// (compare-and-set), else reads again: two machines never lose one
// another's update, and no lock is held while fn runs. The update's key
// goes into done_writes with the document written, so a retry after a
// lost answer writes nothing again.
type agentState struct{ s *Store }

const (
	kindTodo    = "todo"
	kindRuntime = "runtime"
)

func (a *agentState) read(ctx context.Context, agent, kind string, v any) (bool, error) {
	var doc string
	err := a.s.pool.QueryRow(ctx, `SELECT doc FROM agent_state WHERE pid = $1 AND agent = $2 AND kind = $3`, a.s.pid, agent, kind).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, a.s.classify(err)
	}
	return true, json.Unmarshal([]byte(doc), v)
}

func (a *agentState) Todolist(ctx context.Context, agent string) (*store.Todolist, error) {
	var tl store.Todolist
	if ok, err := a.read(ctx, agent, kindTodo, &tl); !ok {
		return nil, err
	}
	return &tl, nil
}

func (a *agentState) Runtime(ctx context.Context, agent string) (*store.RuntimeState, error) {
	var rs store.RuntimeState
	if ok, err := a.read(ctx, agent, kindRuntime, &rs); !ok {
		return nil, err
	}
	return &rs, nil
}

func (a *agentState) UpdateTodolist(ctx context.Context, agent string, fn func(*store.Todolist, bool) error) error {
	return update(ctx, a, agent, kindTodo, fn)
}

func (a *agentState) UpdateRuntime(ctx context.Context, agent string, fn func(*store.RuntimeState, bool) error) error {
	return update(ctx, a, agent, kindRuntime, fn)
}

// errConflict is a compare-and-set that lost to another writer.
var errConflict = errors.New("changed meanwhile")

func update[T any](ctx context.Context, a *agentState, agent, kind string, fn func(*T, bool) error) error {
	key := newKey()
	for {
		err := a.s.tx(ctx, func(tx pgx.Tx) error {
			// A try whose answer was lost wrote it: fn sees the document it
			// wrote (so the caller's outputs are filled in), and nothing is
			// written again — not even over a later writer's change.
			var wrote json.RawMessage
			if done, err := doneWrite(ctx, tx, a.s.pid, key, &wrote); err != nil || done {
				if err == nil {
					var v T
					if err := json.Unmarshal(wrote, &v); err == nil {
						_ = fn(&v, true)
					}
				}
				return err
			}
			var doc string
			var version int64
			err := tx.QueryRow(ctx, `SELECT doc, version FROM agent_state WHERE pid = $1 AND agent = $2 AND kind = $3`,
				a.s.pid, agent, kind).Scan(&doc, &version)
			existed := err == nil
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			var v T
			if existed {
				if err := json.Unmarshal([]byte(doc), &v); err != nil {
					return err
				}
			}
			if err := fn(&v, existed); err != nil {
				return err
			}
			next, err := sandbox.MarshalJSON(v)
			if err != nil {
				return err
			}
			var tag interface{ RowsAffected() int64 }
			if existed {
				tag, err = tx.Exec(ctx, `UPDATE agent_state SET doc = $4, version = version + 1 WHERE pid = $1 AND agent = $2 AND kind = $3 AND version = $5`,
					a.s.pid, agent, kind, string(next), version)
			} else {
				tag, err = tx.Exec(ctx, `INSERT INTO agent_state (pid, agent, kind, version, doc) VALUES ($1, $2, $3, 1, $4) ON CONFLICT DO NOTHING`,
					a.s.pid, agent, kind, string(next))
			}
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return errConflict
			}
			if err := markDone(ctx, tx, a.s.pid, key, json.RawMessage(next)); err != nil {
				return err
			}
			return notify(ctx, tx, a.s.pid, store.ChangedAgent, agent)
		})
		if !errors.Is(err, errConflict) {
			return err
		}
	}
}

func (a *agentState) Agents(ctx context.Context) ([]string, error) {
	rows, err := a.s.pool.Query(ctx, `SELECT DISTINCT agent FROM agent_state WHERE pid = $1 ORDER BY agent`, a.s.pid)
	if err != nil {
		return nil, a.s.classify(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, a.s.classify(rows.Err())
}
