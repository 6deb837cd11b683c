package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/store"
)

// confirmations is the confirmations table, decided by internal/confirm's
// rules (File.Apply, File.Decide) over the rows of one session and tool,
// read under their row locks and a transaction-scoped advisory lock on
// (project, session, tool), so two machines never both consume one
// approval nor both create a pending entry for one call.
type confirmations struct{ s *Store }

func (c *confirmations) Claim(ctx context.Context, session, agent string) error {
	return c.s.tx(ctx, func(tx pgx.Tx) error { return c.claim(ctx, tx, session, agent) })
}

// claim is confirm.File.ClaimSession's rule on the session_claims table:
// the first agent to present an id keeps it (refreshed at most hourly,
// forgotten after confirm.KeepClaim unused); another is refused, and so
// is an agent whose session holds another agent's confirmation.
func (c *confirmations) claim(ctx context.Context, tx pgx.Tx, session, agent string) error {
	now := c.s.o.Clock.Now()
	if _, err := tx.Exec(ctx, `DELETE FROM session_claims WHERE pid = $1 AND session_id = $2 AND seen < $3`,
		c.s.pid, session, now.Add(-confirm.KeepClaim)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO session_claims (pid, session_id, agent, since, seen) VALUES ($1, $2, $3, $4, $4)
		ON CONFLICT (pid, session_id) DO NOTHING`, c.s.pid, session, agent, now); err != nil {
		return err
	}
	var owner string
	if err := tx.QueryRow(ctx, `SELECT agent FROM session_claims WHERE pid = $1 AND session_id = $2 FOR UPDATE`, c.s.pid, session).Scan(&owner); err != nil {
		return err
	}
	if owner == agent {
		var other string
		err := tx.QueryRow(ctx, `SELECT doc::json->>'agent' FROM confirmations WHERE pid = $1 AND session_id = $2 AND doc::json->>'agent' <> $3 LIMIT 1`,
			c.s.pid, session, agent).Scan(&other)
		if err == nil {
			owner = other
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
	}
	if owner != agent {
		return &confirm.SessionTakenError{SessionID: session, Agent: owner, Want: agent}
	}
	_, err := tx.Exec(ctx, `UPDATE session_claims SET seen = $3 WHERE pid = $1 AND session_id = $2 AND seen < $4`,
		c.s.pid, session, now, now.Add(-time.Hour))
	return err
}

func (c *confirmations) Check(ctx context.Context, call confirm.Call) (confirm.Result, error) {
	return c.check(ctx, call, true)
}

func (c *confirmations) Take(ctx context.Context, call confirm.Call) (confirm.Result, error) {
	return c.check(ctx, call, false)
}

func (c *confirmations) check(ctx context.Context, call confirm.Call, create bool) (confirm.Result, error) {
	h, err := confirm.ArgsHash(call.Tool, call.Args)
	if err != nil {
		return confirm.Result{}, err
	}
	key := newKey()
	var res confirm.Result
	err = c.s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, c.s.pid+"\x1f"+call.SessionID+"\x1f"+call.Tool); err != nil {
			return err
		}
		if err := c.claim(ctx, tx, call.SessionID, call.Agent); err != nil {
			return err
		}
		f, keys, err := c.load(ctx, tx, `session_id = $2 AND tool = $3`, call.SessionID, call.Tool)
		if err != nil {
			return err
		}
		// A try whose answer was lost consumed or created an entry: give
		// its outcome again.
		for _, e := range f.Confirmations {
			if keys[e.ID] == key {
				res = confirm.Result{Entry: e}
				switch {
				case e.Status == confirm.Used && e.Decision == confirm.Approved:
					res.Verdict = confirm.Run
				case e.Status == confirm.Used && e.Decision == confirm.Denied:
					res.Verdict = confirm.Deny
				}
				return nil
			}
		}
		before := map[string]string{}
		for _, e := range f.Confirmations {
			before[e.ID] = e.Status
		}
		now := c.s.o.Clock.Now()
		var changed bool
		res, changed = f.Apply(call, h, now, create)
		if !changed {
			return nil
		}
		for _, e := range f.Confirmations {
			if st, ok := before[e.ID]; ok && st == e.Status {
				continue
			}
			if err := c.save(ctx, tx, e, key); err != nil {
				return err
			}
		}
		return notify(ctx, tx, c.s.pid, store.ChangedConfirmations, "")
	})
	return res, err
}

// load reads the entries that match where (with $1 the project) under
// their row locks, with the key of each one's last write.
func (c *confirmations) load(ctx context.Context, tx pgx.Tx, where string, args ...any) (*confirm.File, map[string]string, error) {
	rows, err := tx.Query(ctx, `SELECT doc, last_key FROM confirmations WHERE pid = $1 AND `+where+` ORDER BY created_at, id FOR UPDATE`, append([]any{c.s.pid}, args...)...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	f := &confirm.File{}
	keys := map[string]string{}
	for rows.Next() {
		var doc, key string
		if err := rows.Scan(&doc, &key); err != nil {
			return nil, nil, err
		}
		var e confirm.Entry
		if err := json.Unmarshal([]byte(doc), &e); err != nil {
			return nil, nil, err
		}
		f.Confirmations = append(f.Confirmations, &e)
		keys[e.ID] = key
	}
	return f, keys, rows.Err()
}

func (c *confirmations) save(ctx context.Context, tx pgx.Tx, e *confirm.Entry, key string) error {
	doc, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO confirmations (pid, id, session_id, tool, created_at, last_key, doc) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (pid, id) DO UPDATE SET last_key = excluded.last_key, doc = excluded.doc`,
		c.s.pid, e.ID, e.SessionID, e.Tool, e.CreatedAt, key, string(doc))
	return err
}

func (c *confirmations) Decide(ctx context.Context, id string, approve bool) (*confirm.Entry, error) {
	key := newKey()
	var out *confirm.Entry
	err := c.s.tx(ctx, func(tx pgx.Tx) error {
		f, keys, err := c.load(ctx, tx, `id = $2`, id)
		if err != nil {
			return err
		}
		if len(f.Confirmations) == 1 && keys[id] == key {
			out = f.Confirmations[0] // a try whose answer was lost decided it
			return nil
		}
		e, err := f.Decide(id, approve, c.s.o.Clock.Now())
		if err != nil {
			return err
		}
		out = e
		if err := c.save(ctx, tx, e, key); err != nil {
			return err
		}
		return notify(ctx, tx, c.s.pid, store.ChangedConfirmations, "")
	})
	return out, err
}

// List returns the project's entries; entries closed and older than a day
// are dropped first, as the file store prunes them.
func (c *confirmations) List(ctx context.Context) ([]*confirm.Entry, error) {
	var out []*confirm.Entry
	err := c.s.tx(ctx, func(tx pgx.Tx) error {
		f, _, err := c.load(ctx, tx, `true`)
		if err != nil {
			return err
		}
		all := len(f.Confirmations)
		ids := map[string]bool{}
		for _, e := range f.Confirmations {
			ids[e.ID] = true
		}
		f.Prune(c.s.o.Clock.Now())
		if len(f.Confirmations) < all {
			for _, e := range f.Confirmations {
				delete(ids, e.ID)
			}
			for id := range ids {
				if _, err := tx.Exec(ctx, `DELETE FROM confirmations WHERE pid = $1 AND id = $2`, c.s.pid, id); err != nil {
					return err
				}
			}
		}
		out = f.Confirmations
		return nil
	})
	return out, err
}

// requestStates keeps the project's request-state key and the nonces used.
type requestStates struct{ s *Store }

func (r *requestStates) Key(ctx context.Context) ([]byte, error) {
	var key []byte
	err := r.s.tx(ctx, func(tx pgx.Tx) error {
		fresh := make([]byte, 32)
		if _, err := rand.Read(fresh); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO request_state_keys (pid, key) VALUES ($1, $2) ON CONFLICT DO NOTHING`, r.s.pid, fresh); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT key FROM request_state_keys WHERE pid = $1`, r.s.pid).Scan(&key)
	})
	return key, err
}

// Redeem inserts the nonce; the primary key makes the second use fail.
func (r *requestStates) Redeem(ctx context.Context, nonce string, exp, now time.Time) error {
	key := newKey()
	return r.s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM redeemed_states WHERE pid = $1 AND exp < $2`, r.s.pid, now); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO redeemed_states (pid, nonce, exp, at, idem) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, r.s.pid, nonce, exp, now, key)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		var at time.Time
		var idem string
		if err := tx.QueryRow(ctx, `SELECT at, idem FROM redeemed_states WHERE pid = $1 AND nonce = $2`, r.s.pid, nonce).Scan(&at, &idem); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: a confirmation answer counts once", confirm.ErrStateReplayed)
			}
			return err
		}
		if idem == key {
			return nil // a try whose answer was lost redeemed it
		}
		return fmt.Errorf("%w at %s: a confirmation answer counts once", confirm.ErrStateReplayed, at.UTC().Format(time.RFC3339))
	})
}
