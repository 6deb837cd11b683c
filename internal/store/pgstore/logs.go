package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/store"
)

// logTable is an append-only log of lines in a table (timeline, events):
// numbered from the project's head, read in either order, followed with
// LISTEN.
type logTable[T any] struct {
	s     *Store
	table string
	// decode reads a line; ok false skips it.
	decode func(line string) (T, bool)
}

// appendLine stores the line make(n) returns for the next number n,
// unless a line of this key is stored already; it returns the number.
func (l *logTable[T]) appendLine(ctx context.Context, key string, make func(n int64) ([]byte, error)) (int64, error) {
	var n int64
	err := l.s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO heads (pid, log) VALUES ($1, $2) ON CONFLICT DO NOTHING`, l.s.pid, l.table); err != nil {
			return err
		}
		var head int64
		if err := tx.QueryRow(ctx, `SELECT n FROM heads WHERE pid = $1 AND log = $2 FOR UPDATE`, l.s.pid, l.table).Scan(&head); err != nil {
			return err
		}
		// Under the head's lock: a retry whose first try committed finds it.
		err := tx.QueryRow(ctx, `SELECT seq FROM `+l.table+` WHERE pid = $1 AND idem = $2`, l.s.pid, key).Scan(&n)
		if err == nil {
			return nil
		}
		if err != pgx.ErrNoRows {
			return err
		}
		n = head + 1
		line, err := make(n)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE heads SET n = $3 WHERE pid = $1 AND log = $2`, l.s.pid, l.table, n); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+l.table+` (pid, seq, idem, line) VALUES ($1, $2, $3, $4)`, l.s.pid, n, key, string(line)); err != nil {
			return err
		}
		return notify(ctx, tx, l.s.pid, l.table, "")
	})
	return n, err
}

// each hands fn the records with seq in (after, …] in order (newest
// first when desc), until fn returns false; it returns the last seq read.
func (l *logTable[T]) each(ctx context.Context, after int64, desc bool, limit int, fn func(seq int64, rec T, line string, ok bool) bool) (int64, error) {
	order := "ASC"
	if desc {
		order = "DESC"
	}
	q := `SELECT seq, line FROM ` + l.table + ` WHERE pid = $1 AND seq > $2 ORDER BY seq ` + order
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := l.s.pool.Query(ctx, q, l.s.pid, after)
	if err != nil {
		return after, l.s.classify(err)
	}
	defer rows.Close()
	last := after
	for rows.Next() {
		var seq int64
		var line string
		if err := rows.Scan(&seq, &line); err != nil {
			return last, err
		}
		last = seq
		rec, ok := l.decode(line)
		if !fn(seq, rec, line, ok) {
			return last, nil
		}
	}
	return last, l.s.classify(rows.Err())
}

func (l *logTable[T]) Each(ctx context.Context, fn func(T) error) (ndjson.BadLines, error) {
	var bad ndjson.BadLines
	var ferr error
	_, err := l.each(ctx, 0, false, 0, func(seq int64, rec T, _ string, ok bool) bool {
		if !ok {
			bad.Add(ndjson.Pos{Path: l.table, Line: int(seq)}, "not a record")
			return true
		}
		ferr = fn(rec)
		return ferr == nil
	})
	if ferr != nil {
		return bad, ferr
	}
	return bad, err
}

func (l *logTable[T]) Backward(ctx context.Context, fn func(T) bool) (store.Cursor, error) {
	newest := int64(-1)
	_, err := l.each(ctx, 0, true, 0, func(seq int64, rec T, _ string, ok bool) bool {
		if newest < 0 {
			newest = seq
		}
		return !ok || fn(rec)
	})
	if newest < 0 {
		newest = 0
	}
	return store.Cursor{Seq: newest}, err
}

// end is the newest seq of the log.
func (l *logTable[T]) end(ctx context.Context) (int64, error) {
	var n int64
	err := l.s.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM `+l.table+` WHERE pid = $1`, l.s.pid).Scan(&n)
	return n, l.s.classify(err)
}

// Follow delivers what is appended after from, woken by the log's
// notifications (and every Poll, for one lost while reconnecting).
func (l *logTable[T]) Follow(ctx context.Context, from *store.Cursor, fn func(T, store.Cursor) error) error {
	return l.s.follow(ctx, l.table, from, l.end, func(ctx context.Context, cur int64) (int64, int, error, error) {
		got := 0
		var ferr error
		last, err := l.each(ctx, cur, false, followPage, func(seq int64, rec T, _ string, ok bool) bool {
			got++
			if !ok {
				return true
			}
			ferr = fn(rec, store.Cursor{Seq: seq})
			return ferr == nil
		})
		return last, got, ferr, err
	})
}

// followPage is how many entries a Follow reads at a time.
const followPage = 1000

// follow is the loop every Follow shares. It subscribes to the
// notifications first, so nothing appended after the start is missed: from
// the cursor given (else the log's end), it reads pages after cur until one
// is short, then waits for a notice on what (or a resync after a lost
// connection, or the Poll tick) and reads again. page returns the last
// sequence number read, how many entries it read, fn's error and the
// database's; ctx ending is not an error.
func (s *Store) follow(ctx context.Context, what string, from *store.Cursor, end func(context.Context) (int64, error),
	page func(ctx context.Context, cur int64) (last int64, got int, ferr, err error)) error {
	ch, release := s.listen.subscribe()
	defer release()
	var cur int64
	if from != nil {
		cur = from.Seq
	} else {
		n, err := end(ctx)
		if err != nil {
			return err
		}
		cur = n
	}
	t := time.NewTicker(s.o.Poll)
	defer t.Stop()
	for {
		for {
			last, got, ferr, err := page(ctx, cur)
			if ferr != nil {
				return ferr
			}
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			cur = last
			if got < followPage {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case c := <-ch:
			if c.what != what && c.what != resync {
				continue
			}
		case <-t.C:
		}
	}
}

// timelineLog is the timeline table.
type timelineLog struct{ s *Store }

func (t *timelineLog) log() *logTable[store.TimelineEntry] {
	return &logTable[store.TimelineEntry]{s: t.s, table: "timeline", decode: func(line string) (store.TimelineEntry, bool) {
		var e store.TimelineEntry
		return e, json.Unmarshal([]byte(line), &e) == nil && e.Seq > 0
	}}
}

// Append stores e once per (call, place among the call's entries,
// content): the retry of a call whose answer was lost finds the entry
// its first try stored.
func (t *timelineLog) Append(ctx context.Context, e store.TimelineEntry) (int64, error) {
	key := newKey()
	if e.CallID != "" {
		data, _ := json.Marshal(e.Data)
		h := sha256.New()
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00%s\x00%s\x00%s", e.CallID, e.Nth, e.SessionID, e.Agent, e.Kind, e.Message, data)
		key = "call:" + hex.EncodeToString(h.Sum(nil))
	}
	// What an agent or a tool writes to the timeline keeps no credential
	// (as in the file store). The line is encoded with seq 0, and the
	// database puts the number it takes in its place.
	e.Seq = 0
	line, err := redact.Marshal(e)
	if err != nil {
		return 0, err
	}
	if !bytes.HasPrefix(line, []byte(seqZero)) {
		return 0, fmt.Errorf("timeline entry encodes as %.20q…, not %s…", line, seqZero)
	}
	return t.append(ctx, key, string(line[len(seqZero):]))
}

// seqZero is how an entry's line begins before it has its seq.
const seqZero = `{"seq":0`

// appendSQL appends an entry in one statement (one round trip, no
// explicit transaction): the entry of this key if there is one, else the
// head's next number, taken under the head row's lock for the statement's
// transaction, and the line with it; and the notification.
const appendSQL = `WITH dup AS (SELECT seq FROM timeline WHERE pid = $1 AND idem = $2),
h AS (UPDATE heads SET n = n + 1 WHERE pid = $1 AND log = 'timeline' AND NOT EXISTS (SELECT 1 FROM dup) RETURNING n),
ins AS (INSERT INTO timeline (pid, seq, idem, line) SELECT $1, n, $2, '{"seq":' || n || $3 FROM h RETURNING seq),
nt AS (SELECT pg_notify('toolhost', $4) FROM ins)
SELECT coalesce((SELECT seq FROM ins), (SELECT seq FROM dup), 0), (SELECT count(*) FROM nt)`

func (t *timelineLog) append(ctx context.Context, key, rest string) (int64, error) {
	var seq int64
	err := t.s.retry(ctx, func() (bool, error) {
		for {
			var notified int64
			err := t.s.pool.QueryRow(ctx, appendSQL, t.s.pid, key, rest, t.s.pid+"\x1ftimeline\x1f").Scan(&seq, &notified)
			var pe *pgconn.PgError
			switch {
			case errors.As(err, &pe) && pe.Code == "23505":
				continue // the same key raced itself: the next try finds it
			case err != nil:
				// The statement commits by itself: unless it never went
				// out, it may have.
				return !sentNothing(err), err
			case seq == 0:
				// No head yet: the project's first entry.
				if _, err := t.s.pool.Exec(ctx, `INSERT INTO heads (pid, log) VALUES ($1, 'timeline') ON CONFLICT DO NOTHING`, t.s.pid); err != nil {
					return false, err
				}
				continue
			}
			return false, nil
		}
	})
	return seq, err
}

func (t *timelineLog) Each(ctx context.Context, fn func(store.TimelineEntry) error) (ndjson.BadLines, error) {
	return t.log().Each(ctx, fn)
}

func (t *timelineLog) Backward(ctx context.Context, fn func(store.TimelineEntry) bool) (store.Cursor, error) {
	return t.log().Backward(ctx, fn)
}

func (t *timelineLog) Follow(ctx context.Context, from *store.Cursor, fn func(store.TimelineEntry, store.Cursor) error) error {
	return t.log().Follow(ctx, from, fn)
}

// eventsLog is the events table.
type eventsLog struct{ s *Store }

func (e *eventsLog) log() *logTable[store.Event] {
	return &logTable[store.Event]{s: e.s, table: "events", decode: func(line string) (store.Event, bool) {
		var ev store.Event
		return ev, json.Unmarshal([]byte(line), &ev) == nil && ev.Kind != ""
	}}
}

func (e *eventsLog) Emit(ctx context.Context, ev store.Event) error {
	line, err := redact.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", ev.Kind, err)
	}
	_, err = e.log().appendLine(ctx, newKey(), func(int64) ([]byte, error) { return line, nil })
	return err
}

func (e *eventsLog) Each(ctx context.Context, fn func(store.Event) error) (ndjson.BadLines, error) {
	return e.log().Each(ctx, fn)
}

func (e *eventsLog) Backward(ctx context.Context, fn func(store.Event) bool) (store.Cursor, error) {
	return e.log().Backward(ctx, fn)
}

func (e *eventsLog) Follow(ctx context.Context, from *store.Cursor, fn func(store.Event, store.Cursor) error) error {
	return e.log().Follow(ctx, from, fn)
}

func (l *logTable[T]) Lines(ctx context.Context, fn func([]byte) error) error {
	var ferr error
	_, err := l.each(ctx, 0, false, 0, func(_ int64, _ T, line string, _ bool) bool {
		ferr = fn([]byte(line))
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	return err
}

func (t *timelineLog) Lines(ctx context.Context, fn func([]byte) error) error {
	return t.log().Lines(ctx, fn)
}

func (e *eventsLog) Lines(ctx context.Context, fn func([]byte) error) error {
	return e.log().Lines(ctx, fn)
}
