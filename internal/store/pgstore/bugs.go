package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// bugStore is the bugs table: one row per bug, its document as the file
// store writes it, and the columns bug_list sorts and filters by (indexed,
// so a listing costs the same at any number of bugs). A fingerprint is
// unique per project; numbers come from the project's "bugs" head.
type bugStore struct{ s *Store }

func bugDoc(b *bugs.Bug) (string, error) {
	data, err := sandbox.MarshalJSON(b)
	return string(data), err
}

func decodeBug(doc string) (*bugs.Bug, error) {
	var b bugs.Bug
	if err := json.Unmarshal([]byte(doc), &b); err != nil {
		return nil, err
	}
	if b.Evidence == nil {
		b.Evidence = []bugs.Evidence{}
	}
	if b.History == nil {
		b.History = []bugs.Transition{}
	}
	return &b, nil
}

// opened is what done_writes keeps of a bug_open that wrote.
type opened struct {
	Duplicate     bool `json:"duplicate"`
	EvidenceAdded bool `json:"evidence_added"`
}

// Open finds the fingerprint's bug under its row lock, or creates the bug
// under the head's lock, which serialises creations: two machines never
// create two bugs for one fingerprint (the unique constraint holds it
// anyway). Under those locks a retry after a lost answer finds its key in
// done_writes and answers as the first try did.
func (b *bugStore) Open(ctx context.Context, nb bugs.NewBug) (bugs.Opened, error) {
	fp := nb.Fingerprint()
	key := newKey()
	var out bugs.Opened
	err := b.s.tx(ctx, func(tx pgx.Tx) error {
		out = bugs.Opened{}
		bug, err := b.byFingerprint(ctx, tx, fp)
		if err != nil {
			return err
		}
		if bug == nil {
			if _, err := tx.Exec(ctx, `INSERT INTO heads (pid, log) VALUES ($1, 'bugs') ON CONFLICT DO NOTHING`, b.s.pid); err != nil {
				return err
			}
			var n int64
			if err := tx.QueryRow(ctx, `SELECT n FROM heads WHERE pid = $1 AND log = 'bugs' FOR UPDATE`, b.s.pid).Scan(&n); err != nil {
				return err
			}
			// Another machine may have created it while this one waited.
			if bug, err = b.byFingerprint(ctx, tx, fp); err != nil {
				return err
			}
			if bug == nil {
				return b.create(ctx, tx, nb, int(n)+1, key, &out)
			}
		}
		var was opened
		if done, err := doneWrite(ctx, tx, b.s.pid, key, &was); err != nil || done {
			out = bugs.Opened{Bug: bug, Duplicate: was.Duplicate, EvidenceAdded: was.EvidenceAdded}
			return err
		}
		out.Duplicate = true
		out.Bug = bug
		if out.EvidenceAdded = bug.Cite(nb); !out.EvidenceAdded {
			return nil
		}
		if err := b.save(ctx, tx, bug); err != nil {
			return err
		}
		return markDone(ctx, tx, b.s.pid, key, opened{Duplicate: true, EvidenceAdded: true})
	})
	return out, err
}

func (b *bugStore) create(ctx context.Context, tx pgx.Tx, nb bugs.NewBug, n int, key string, out *bugs.Opened) error {
	bug := nb.Bug(bugs.FormatID(n))
	doc, err := bugDoc(bug)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE heads SET n = $2 WHERE pid = $1 AND log = 'bugs'`, b.s.pid, n); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bugs (pid, num, fingerprint, status, sev_rank, unit_id, doc) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		b.s.pid, n, bug.Fingerprint, bug.Status, bugs.SeverityRank(bug.Severity), bug.UnitID, doc); err != nil {
		return err
	}
	if err := countBug(ctx, tx, b.s.pid, bug, 1); err != nil {
		return err
	}
	if err := markDone(ctx, tx, b.s.pid, key, opened{EvidenceAdded: true}); err != nil {
		return err
	}
	*out = bugs.Opened{Bug: bug, EvidenceAdded: true}
	return notify(ctx, tx, b.s.pid, "bugs", "")
}

// byFingerprint reads the fingerprint's bug under its row lock (nil: none).
func (b *bugStore) byFingerprint(ctx context.Context, tx pgx.Tx, fp string) (*bugs.Bug, error) {
	var doc string
	err := tx.QueryRow(ctx, `SELECT doc FROM bugs WHERE pid = $1 AND fingerprint = $2 FOR UPDATE`, b.s.pid, fp).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeBug(doc)
}

// countBug moves the count of bug's (status, severity, unit) by d.
func countBug(ctx context.Context, tx pgx.Tx, pid string, bug *bugs.Bug, d int) error {
	_, err := tx.Exec(ctx, `INSERT INTO bug_counts (pid, status, sev_rank, unit_id, n) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (pid, status, sev_rank, unit_id) DO UPDATE SET n = bug_counts.n + excluded.n`,
		pid, bug.Status, bugs.SeverityRank(bug.Severity), bug.UnitID, d)
	return err
}

// save writes a changed bug back (its row is locked by the caller) and
// moves it between the counts when its status changed.
func (b *bugStore) save(ctx context.Context, tx pgx.Tx, bug *bugs.Bug) error {
	var was bugs.Bug
	if err := tx.QueryRow(ctx, `SELECT status, unit_id FROM bugs WHERE pid = $1 AND num = $2`, b.s.pid, bugs.IDNumber(bug.ID)).Scan(&was.Status, &was.UnitID); err != nil {
		return err
	}
	was.Severity = bug.Severity
	if was.Status != bug.Status || was.UnitID != bug.UnitID {
		if err := countBug(ctx, tx, b.s.pid, &was, -1); err != nil {
			return err
		}
		if err := countBug(ctx, tx, b.s.pid, bug, 1); err != nil {
			return err
		}
	}
	doc, err := bugDoc(bug)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE bugs SET status = $3, sev_rank = $4, unit_id = $5, doc = $6 WHERE pid = $1 AND num = $2`,
		b.s.pid, bugs.IDNumber(bug.ID), bug.Status, bugs.SeverityRank(bug.Severity), bug.UnitID, doc); err != nil {
		return err
	}
	return notify(ctx, tx, b.s.pid, "bugs", "")
}

// Transition moves the bug under its row lock: compare-and-set on its
// status, held by the lock (a second mover reads the status the first
// wrote). A retry after a lost answer finds its key in done_writes and
// answers with the transition it made, though others may have moved the
// bug since.
func (b *bugStore) Transition(ctx context.Context, id, to, by, note string, at time.Time) (*bugs.Bug, bugs.Transition, error) {
	n := bugs.IDNumber(id)
	if n == 0 {
		return nil, bugs.Transition{}, fmt.Errorf("bug id %q must look like BUG-0001", id)
	}
	key := newKey()
	var out *bugs.Bug
	var tr bugs.Transition
	err := b.s.tx(ctx, func(tx pgx.Tx) error {
		var doc string
		err := tx.QueryRow(ctx, `SELECT doc FROM bugs WHERE pid = $1 AND num = $2 FOR UPDATE`, b.s.pid, n).Scan(&doc)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", bugs.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		bug, err := decodeBug(doc)
		if err != nil {
			return err
		}
		out = bug
		if done, err := doneWrite(ctx, tx, b.s.pid, key, &tr); err != nil || done {
			return err
		}
		if tr, err = bug.Move(to, by, note, at); err != nil {
			return err
		}
		if err := b.save(ctx, tx, bug); err != nil {
			return err
		}
		return markDone(ctx, tx, b.s.pid, key, tr)
	})
	return out, tr, err
}

// List answers from the index on (status, severity, number): the first
// Limit matches by severity then id, and how many match.
func (b *bugStore) List(ctx context.Context, q bugs.Query) (bugs.Listing, error) {
	where := `pid = $1`
	args := []any{b.s.pid}
	if q.Status != "" {
		args = append(args, q.Status)
		where += fmt.Sprintf(" AND status = $%d", len(args))
	}
	if q.UnitID != "" {
		args = append(args, q.UnitID)
		where += fmt.Sprintf(" AND unit_id = $%d", len(args))
	}
	if q.Severity != "" {
		args = append(args, bugs.SeverityRank(q.Severity))
		where += fmt.Sprintf(" AND sev_rank = $%d", len(args))
	}
	out := bugs.Listing{Bugs: []bugs.Summary{}}
	if err := b.s.pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM bug_counts WHERE `+where, args...).Scan(&out.Total); err != nil {
		return out, b.s.classify(err)
	}
	args = append(args, max(q.Limit, 0))
	rows, err := b.s.pool.Query(ctx, fmt.Sprintf(`SELECT doc FROM bugs WHERE %s ORDER BY sev_rank, num LIMIT $%d`, where, len(args)), args...)
	if err != nil {
		return out, b.s.classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return out, err
		}
		bug, err := decodeBug(doc)
		if err != nil {
			return out, err
		}
		out.Bugs = append(out.Bugs, bugs.SummaryOf(bug))
	}
	return out, b.s.classify(rows.Err())
}

func (b *bugStore) Get(ctx context.Context, id string) (*bugs.Bug, error) {
	n := bugs.IDNumber(id)
	if n == 0 {
		return nil, fmt.Errorf("bug id %q must look like BUG-0001", id)
	}
	var doc string
	err := b.s.pool.QueryRow(ctx, `SELECT doc FROM bugs WHERE pid = $1 AND num = $2`, b.s.pid, n).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", bugs.ErrNotFound, id)
	}
	if err != nil {
		return nil, b.s.classify(err)
	}
	return decodeBug(doc)
}

func (b *bugStore) Summaries(ctx context.Context) ([]bugs.Summary, error) {
	var out []bugs.Summary
	_, err := b.Each(ctx, func(bug *bugs.Bug) error {
		out = append(out, bugs.SummaryOf(bug))
		return nil
	})
	return out, err
}

func (b *bugStore) Each(ctx context.Context, fn func(*bugs.Bug) error) ([]bugs.Unreadable, error) {
	rows, err := b.s.pool.Query(ctx, `SELECT num, doc FROM bugs WHERE pid = $1 ORDER BY num`, b.s.pid)
	if err != nil {
		return nil, b.s.classify(err)
	}
	defer rows.Close()
	var bad []bugs.Unreadable
	for rows.Next() {
		var n int
		var doc string
		if err := rows.Scan(&n, &doc); err != nil {
			return bad, err
		}
		bug, err := decodeBug(doc)
		if err != nil {
			bad = append(bad, bugs.Unreadable{ID: bugs.FormatID(n), Reason: err.Error()})
			continue
		}
		if err := fn(bug); err != nil {
			return bad, err
		}
	}
	return bad, b.s.classify(rows.Err())
}
