package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/store"
)

// auditTrail is the audit table: every line of the trail as hashed, its
// number n, its chain seq, and the columns filters use. The head row (log
// "audit") holds the chain's end — the last seq, the sha256 of its line
// and the chain id — and is locked FOR UPDATE by each append, so the
// "prev" of a line is the hash of the line really before it, whichever
// machine wrote that. It is also the checkpoint: it changes in the same
// transaction as the line.
type auditTrail struct {
	s *Store

	// wmu is held while a row goes to the database, so this process's
	// rows are stored in the order they were written.
	wmu sync.Mutex
	// mu guards pending and away, never held across a call to the
	// database.
	mu      sync.Mutex
	pending []pendingRow // rows the database did not take yet, oldest first
	// away: the last try found the database away. Rows then join the
	// queue at once; only the flush (every second) waits for it.
	away    bool
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

type pendingRow struct {
	body []byte // the row's JSON without its closing brace
	row  audit.Row
	key  string
}

func newAuditTrail(s *Store) *auditTrail {
	a := &auditTrail{s: s, stop: make(chan struct{}), stopped: make(chan struct{})}
	go a.flushLoop()
	return a
}

// auditFile is the file of the lines written here in the file layout.
const auditFile = audit.Path

// Write appends the row at the end of the chain. While the database
// cannot be reached the row waits in memory (bounded, in order) and is
// written as soon as it answers again: *audit.DeferredError. The row's
// key makes a try whose commit's answer was lost, then tried again, one
// row.
func (a *auditTrail) Write(r *audit.Row) error {
	row := *r
	row.Seq, row.Prev = 0, ""
	b := row.AppendJSON(nil)
	p := pendingRow{body: b[:len(b)-1], row: row, key: newKey()}
	if err := a.queueIfAway(p); err != errNotQueued {
		return err
	}
	a.wmu.Lock()
	defer a.wmu.Unlock()
	// The database may have gone away while this row waited its turn.
	if err := a.queueIfAway(p); err != errNotQueued {
		return err
	}
	if err := a.flushLocked(); err != nil {
		return a.queue(p, err)
	}
	err := a.appendRow(context.Background(), p)
	if err == nil || !store.IsUnavailable(err) {
		return err
	}
	return a.queue(p, err)
}

// errNotQueued: the database is not known to be away, so the row goes to
// it now.
var errNotQueued = errors.New("not queued")

// queueIfAway puts p behind the rows that wait if the database was away
// at the last try.
func (a *auditTrail) queueIfAway(p pendingRow) error {
	a.mu.Lock()
	away := a.away && len(a.pending) > 0
	a.mu.Unlock()
	if !away {
		return errNotQueued
	}
	return a.queue(p, a.s.away(errRowsWaiting, false))
}

// errRowsWaiting is why a row is queued behind others.
var errRowsWaiting = errors.New("the database was away at this process's last try; its rows wait for it")

// queue puts p behind the rows that wait, because of cause (the database
// is away), within the bound.
func (a *auditTrail) queue(p pendingRow, cause error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.away = true
	if len(a.pending) >= a.s.o.AuditBacklog {
		return fmt.Errorf("%w; not kept for later either: %d rows already wait in memory", cause, len(a.pending))
	}
	a.pending = append(a.pending, p)
	return &audit.DeferredError{Err: cause, Pending: len(a.pending)}
}

// flush writes the rows that wait, oldest first, and stops at the first
// the database does not take.
func (a *auditTrail) flush() error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return a.flushLocked()
}

// flushLocked is flush with wmu held; the database is not away once every
// row is written.
func (a *auditTrail) flushLocked() error {
	for {
		a.mu.Lock()
		if len(a.pending) == 0 {
			a.pending, a.away = nil, false
			a.mu.Unlock()
			return nil
		}
		p := a.pending[0]
		a.mu.Unlock()
		if err := a.appendRow(context.Background(), p); err != nil {
			return err
		}
		a.mu.Lock()
		a.pending[0] = pendingRow{}
		a.pending = a.pending[1:]
		a.mu.Unlock()
	}
}

func (a *auditTrail) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending)
}

func (a *auditTrail) flushLoop() {
	defer close(a.stopped)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			if a.waiting() > 0 {
				_ = a.flush()
			}
		}
	}
}

// close writes what waits in memory, if the database answers; its error
// names the rows that could not be written.
func (a *auditTrail) close() error {
	a.once.Do(func() { close(a.stop) })
	<-a.stopped
	if err := a.flush(); err != nil {
		return fmt.Errorf("%d audit rows could not be written (they are in the log as audit_write_failed): %w", a.waiting(), err)
	}
	return nil
}

// head is the chain's end as the head row holds it.
type head struct {
	n, seq int64
	hash   [32]byte
	chain  string
}

func lockHead(ctx context.Context, tx pgx.Tx, pid string) (head, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO heads (pid, log) VALUES ($1, 'audit') ON CONFLICT DO NOTHING`, pid); err != nil {
		return head{}, err
	}
	var h head
	var hash []byte
	err := tx.QueryRow(ctx, `SELECT n, seq, hash, chain FROM heads WHERE pid = $1 AND log = 'audit' FOR UPDATE`, pid).Scan(&h.n, &h.seq, &hash, &h.chain)
	copy(h.hash[:], hash)
	return h, err
}

// insertLine stores one line after h and moves h past it.
func insertLine(ctx context.Context, tx pgx.Tx, pid string, h *head, file string, line []byte, key string, r *audit.Row) error {
	h.n++
	seq, rec := audit.ChainOf(line)
	var ts *time.Time
	var agent, tool, status *string
	if r != nil {
		t, st := r.TS, string(r.Status)
		ts, agent, tool, status = &t, &r.Agent, &r.Tool, &st
	}
	var seqArg *int64
	if seq > 0 {
		seqArg = &seq
		h.seq, h.hash = seq, audit.LineHash(line)
		if rec != nil && rec.ID != "" {
			h.chain = rec.ID
		}
	}
	var idem *string
	if key != "" {
		idem = &key
	}
	_, err := tx.Exec(ctx, `INSERT INTO audit (pid, n, seq, idem, file, line, ts, agent, tool, status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		pid, h.n, seqArg, idem, file, string(line), ts, agent, tool, status)
	return err
}

func saveHead(ctx context.Context, tx pgx.Tx, pid string, h head) error {
	_, err := tx.Exec(ctx, `UPDATE heads SET n = $2, seq = $3, hash = $4, chain = $5 WHERE pid = $1 AND log = 'audit'`, pid, h.n, h.seq, h.hash[:], h.chain)
	return err
}

// startLocked writes the chain's start record when the trail is new.
func (a *auditTrail) startLocked(ctx context.Context, tx pgx.Tx, h *head) error {
	if h.seq > 0 {
		return nil
	}
	rec := &audit.ChainRecord{Event: audit.ChainStart, ID: audit.NewChainID(), Project: a.s.pid}
	return insertLine(ctx, tx, a.s.pid, h, auditFile, audit.ChainRecordLine(time.Now().UTC(), rec, 1, [32]byte{}), "", nil)
}

func (a *auditTrail) appendRow(ctx context.Context, p pendingRow) error {
	return a.s.tx(ctx, func(tx pgx.Tx) error {
		h, err := lockHead(ctx, tx, a.s.pid)
		if err != nil {
			return err
		}
		var found int64
		switch err := tx.QueryRow(ctx, `SELECT n FROM audit WHERE pid = $1 AND idem = $2`, a.s.pid, p.key).Scan(&found); {
		case err == nil:
			return nil // a try whose answer was lost wrote it
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := a.startLocked(ctx, tx, &h); err != nil {
			return err
		}
		line := audit.AppendChained(nil, p.body, h.seq+1, h.hash)
		if err := insertLine(ctx, tx, a.s.pid, &h, auditFile, line, p.key, &p.row); err != nil {
			return err
		}
		if err := saveHead(ctx, tx, a.s.pid, h); err != nil {
			return err
		}
		return notify(ctx, tx, a.s.pid, "audit", "")
	})
}

// Open starts the trail (its start record) if it is new: the start-up
// check that the database takes writes.
func (a *auditTrail) Open() error {
	ctx := context.Background()
	return a.s.tx(ctx, func(tx pgx.Tx) error {
		h, err := lockHead(ctx, tx, a.s.pid)
		if err != nil || h.seq > 0 {
			return err
		}
		if err := a.startLocked(ctx, tx, &h); err != nil {
			return err
		}
		return saveHead(ctx, tx, a.s.pid, h)
	})
}

// exists reports whether the project has a trail.
func (a *auditTrail) exists(ctx context.Context) error {
	var n int64
	if err := a.s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM audit WHERE pid = $1 LIMIT 1) x`, a.s.pid).Scan(&n); err != nil {
		return a.s.classify(err)
	}
	if n == 0 {
		return &store.NoTrailError{Where: a.s.Describe()}
	}
	return nil
}

// lines hands fn the lines with n in (after, …], in order (newest first
// when desc), until fn returns false; it returns the last n read.
func (a *auditTrail) lines(ctx context.Context, after int64, desc bool, limit int, since time.Time, fn func(n int64, file string, line []byte) bool) (int64, error) {
	order := "ASC"
	if desc {
		order = "DESC"
	}
	q := `SELECT n, file, line FROM audit WHERE pid = $1 AND n > $2`
	args := []any{a.s.pid, after}
	if !since.IsZero() {
		q += ` AND (ts IS NULL OR ts >= $3)`
		args = append(args, since)
	}
	q += ` ORDER BY n ` + order
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := a.s.pool.Query(ctx, q, args...)
	if err != nil {
		return after, a.s.classify(err)
	}
	defer rows.Close()
	last := after
	var line []byte
	var file string
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n, &file, &line); err != nil {
			return last, err
		}
		last = n
		if !fn(n, file, line) {
			return last, nil
		}
	}
	return last, a.s.classify(rows.Err())
}

func (a *auditTrail) EachLine(ctx context.Context, f audit.Filter, fn func(*audit.Row, []byte) error) (ndjson.BadLines, error) {
	var bad ndjson.BadLines
	if err := a.exists(ctx); err != nil {
		return bad, err
	}
	var r audit.Row
	var ferr error
	_, err := a.lines(ctx, 0, false, 0, f.Since, func(n int64, file string, line []byte) bool {
		row, reason := audit.ParseLine(line, &r)
		if reason != "" {
			bad.Add(ndjson.Pos{Path: file, Line: int(n)}, reason)
		}
		if !row || !f.Match(&r) {
			return true
		}
		ferr = fn(&r, line)
		return ferr == nil
	})
	if ferr != nil {
		return bad, ferr
	}
	return bad, err
}

func (a *auditTrail) Stats(ctx context.Context, f audit.Filter) ([]audit.ToolStats, ndjson.BadLines, error) {
	var b audit.StatsBuilder
	bad, err := a.EachLine(ctx, f, func(r *audit.Row, _ []byte) error {
		b.Add(r.Tool, r.Status, r.DurationMS)
		return nil
	})
	return b.Result(), bad, err
}

func (a *auditTrail) Backward(ctx context.Context, fn func(*audit.Row) bool) (store.Cursor, error) {
	newest := int64(-1)
	var r audit.Row
	_, err := a.lines(ctx, 0, true, 0, time.Time{}, func(n int64, _ string, line []byte) bool {
		if newest < 0 {
			newest = n
		}
		row, _ := audit.ParseLine(line, &r)
		return !row || fn(&r)
	})
	return store.Cursor{Seq: max(newest, 0)}, err
}

func (a *auditTrail) Follow(ctx context.Context, from *store.Cursor, fn func(*audit.Row, store.Cursor) error) error {
	return a.s.follow(ctx, "audit", from, func(ctx context.Context) (int64, error) {
		var n int64
		err := a.s.pool.QueryRow(ctx, `SELECT coalesce(max(n), 0) FROM audit WHERE pid = $1`, a.s.pid).Scan(&n)
		return n, a.s.classify(err)
	}, func(ctx context.Context, cur int64) (int64, int, error, error) {
		var r audit.Row
		got := 0
		var ferr error
		last, err := a.lines(ctx, cur, false, followPage, time.Time{}, func(n int64, _ string, line []byte) bool {
			got++
			if row, _ := audit.ParseLine(line, &r); row {
				ferr = fn(&r, store.Cursor{Seq: n})
			}
			return ferr == nil
		})
		return last, got, ferr, err
	})
}

// dbLines is the trail's lines as audit.Lines; a file is one part of the
// file layout (the lines a rotation had put in one file).
type dbLines struct {
	rows   pgx.Rows
	line   []byte
	file   string
	n      int64
	index  int
	inFile int
	err    error
}

func (d *dbLines) Next() bool {
	if !d.rows.Next() {
		d.err = d.rows.Err()
		return false
	}
	var file string
	if d.err = d.rows.Scan(&d.n, &file, &d.line); d.err != nil {
		return false
	}
	if file != d.file {
		d.file, d.index, d.inFile = file, d.index+1, 0
	}
	d.inFile++
	return true
}

func (d *dbLines) Line() []byte     { return d.line }
func (d *dbLines) Pos() ndjson.Pos  { return ndjson.Pos{Path: d.file, Line: d.inFile} }
func (d *dbLines) File() int        { return d.index }
func (d *dbLines) Terminated() bool { return true }
func (d *dbLines) Err() error       { return d.err }

// Verify walks the chain over the lines as stored, with the head as the
// checkpoint: the chain's end, changed in the same transaction as its
// last line, so rows cut off the end are seen.
func (a *auditTrail) Verify(ctx context.Context) (*audit.Verification, error) {
	if err := a.exists(ctx); err != nil {
		return nil, err
	}
	tx, err := a.s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, a.s.classify(err)
	}
	defer tx.Rollback(ctx)
	var cp *audit.Checkpoint
	var h head
	var hash []byte
	switch err := tx.QueryRow(ctx, `SELECT n, seq, hash, chain FROM heads WHERE pid = $1 AND log = 'audit'`, a.s.pid).Scan(&h.n, &h.seq, &hash, &h.chain); {
	case err == nil && h.seq > 0:
		cp = &audit.Checkpoint{ID: h.chain, Seq: h.seq, SHA256: hex.EncodeToString(hash)}
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return nil, a.s.classify(err)
	}
	var files int
	if err := tx.QueryRow(ctx, `SELECT count(DISTINCT file) FROM audit WHERE pid = $1`, a.s.pid).Scan(&files); err != nil {
		return nil, a.s.classify(err)
	}
	rows, err := tx.Query(ctx, `SELECT n, file, line FROM audit WHERE pid = $1 ORDER BY n`, a.s.pid)
	if err != nil {
		return nil, a.s.classify(err)
	}
	defer rows.Close()
	v, err := audit.VerifyLines(&dbLines{rows: rows}, files, cp)
	return v, a.s.classify(err)
}

func (a *auditTrail) Lines(ctx context.Context, fn func(file string, line []byte) error) error {
	if err := a.exists(ctx); err != nil {
		return err
	}
	var ferr error
	_, err := a.lines(ctx, 0, false, 0, time.Time{}, func(_ int64, file string, line []byte) bool {
		ferr = fn(file, line)
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	return err
}
