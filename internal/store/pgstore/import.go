package pgstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
)

// Import takes a project's state into the database (store.Importer): the
// target of `toolhost store import --from DIR`. Everything happens in one
// transaction, so an import is whole or not at all, and the project must
// have no state yet (an import never mixes two projects' records). Lines
// keep their bytes and numbers: the timeline's seq, the audit chain.
type Import struct {
	s    *Store
	tx   pgx.Tx
	head head // the audit trail's end so far
	tl   int64
	ev   int64
	bugN int
}

// NewImport starts an import into the store's project.
func (s *Store) NewImport(ctx context.Context) (*Import, error) {
	var used bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM heads WHERE pid = $1 AND n > 0)
		OR EXISTS (SELECT 1 FROM agent_state WHERE pid = $1) OR EXISTS (SELECT 1 FROM confirmations WHERE pid = $1)`, s.pid).Scan(&used)
	if err != nil {
		return nil, s.classify(err)
	}
	if used {
		return nil, fmt.Errorf("project %s already has state in %s: import into a new project id (--pid), or export this one first", s.pid, s.addr)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, s.classify(err)
	}
	return &Import{s: s, tx: tx}, nil
}

func (im *Import) TimelineLine(ctx context.Context, line []byte) error {
	var e struct {
		Seq int64 `json:"seq"`
	}
	if json.Unmarshal(line, &e) != nil || e.Seq <= im.tl {
		// A line the file store skips as not an entry, or out of order:
		// kept, after the last entry, so nothing is lost.
		e.Seq = im.tl + 1
	}
	im.tl = e.Seq
	_, err := im.tx.Exec(ctx, `INSERT INTO timeline (pid, seq, idem, line) VALUES ($1, $2, $3, $4)`, im.s.pid, e.Seq, fmt.Sprint("import:", e.Seq), string(line))
	return err
}

func (im *Import) EventLine(ctx context.Context, line []byte) error {
	im.ev++
	_, err := im.tx.Exec(ctx, `INSERT INTO events (pid, seq, idem, line) VALUES ($1, $2, $3, $4)`, im.s.pid, im.ev, fmt.Sprint("import:", im.ev), string(line))
	return err
}

func (im *Import) AuditLine(ctx context.Context, file string, line []byte) error {
	var r audit.Row
	row, _ := audit.ParseLine(line, &r)
	rp := &r
	if !row {
		rp = nil
	}
	return insertLine(ctx, im.tx, im.s.pid, &im.head, file, line, "", rp)
}

func (im *Import) Bug(ctx context.Context, b *bugs.Bug) error {
	n := bugs.IDNumber(b.ID)
	im.bugN = max(im.bugN, n)
	doc, err := bugDoc(b)
	if err != nil {
		return err
	}
	_, err = im.tx.Exec(ctx, `INSERT INTO bugs (pid, num, fingerprint, status, sev_rank, unit_id, doc) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		im.s.pid, n, b.Fingerprint, b.Status, bugs.SeverityRank(b.Severity), b.UnitID, doc)
	return err
}

func (im *Import) state(ctx context.Context, agent, kind string, v any) error {
	doc, err := sandbox.MarshalJSON(v)
	if err != nil {
		return err
	}
	_, err = im.tx.Exec(ctx, `INSERT INTO agent_state (pid, agent, kind, version, doc) VALUES ($1, $2, $3, 1, $4)`, im.s.pid, agent, kind, string(doc))
	return err
}

func (im *Import) Todolist(ctx context.Context, agent string, tl *store.Todolist) error {
	return im.state(ctx, agent, kindTodo, tl)
}

func (im *Import) Runtime(ctx context.Context, agent string, rs *store.RuntimeState) error {
	return im.state(ctx, agent, kindRuntime, rs)
}

func (im *Import) Confirmation(ctx context.Context, e *confirm.Entry) error {
	return (&confirmations{s: im.s}).save(ctx, im.tx, e, "import")
}

func (im *Import) RequestStateKey(ctx context.Context, key []byte) error {
	_, err := im.tx.Exec(ctx, `INSERT INTO request_state_keys (pid, key) VALUES ($1, $2) ON CONFLICT (pid) DO UPDATE SET key = excluded.key`, im.s.pid, key)
	return err
}

// Done sets the heads past what was imported and commits.
func (im *Import) Done(ctx context.Context) error {
	defer im.tx.Rollback(ctx)
	for _, h := range []struct {
		log string
		n   int64
	}{{"timeline", im.tl}, {"events", im.ev}, {"bugs", int64(im.bugN)}} {
		if _, err := im.tx.Exec(ctx, `INSERT INTO heads (pid, log, n) VALUES ($1, $2, $3) ON CONFLICT (pid, log) DO UPDATE SET n = excluded.n`, im.s.pid, h.log, h.n); err != nil {
			return err
		}
	}
	if _, err := im.tx.Exec(ctx, `INSERT INTO heads (pid, log) VALUES ($1, 'audit') ON CONFLICT DO NOTHING`, im.s.pid); err != nil {
		return err
	}
	if err := saveHead(ctx, im.tx, im.s.pid, im.head); err != nil {
		return err
	}
	if _, err := im.tx.Exec(ctx, `INSERT INTO bug_counts (pid, status, sev_rank, unit_id, n)
		SELECT pid, status, sev_rank, unit_id, count(*) FROM bugs WHERE pid = $1 GROUP BY pid, status, sev_rank, unit_id`, im.s.pid); err != nil {
		return err
	}
	if err := notify(ctx, im.tx, im.s.pid, resync, ""); err != nil {
		return err
	}
	if err := im.tx.Commit(ctx); err != nil {
		return im.s.classify(err)
	}
	// The planner's statistics, now rather than whenever autovacuum comes
	// by: bug_list on thousands of imported bugs must use its index.
	_, err := im.s.pool.Exec(ctx, `ANALYZE bugs, audit, timeline`)
	return im.s.classify(err)
}
