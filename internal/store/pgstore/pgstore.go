package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/store"
)

// Options configure a database store.
type Options struct {
	// ProjectID is the tenant: every row read or written is the project's.
	ProjectID string
	// Clock stamps confirmations and request states (UTC now when nil).
	Clock confirm.Clock
	// RetryFor bounds how long a write is retried while the database
	// cannot be reached before it fails with store.UnavailableError
	// (default 5 s).
	RetryFor time.Duration
	// Poll is how often followers look even without a notification (a
	// notification lost while the listener reconnected); default 1 s.
	Poll time.Duration
	// AuditBacklog bounds the audit rows kept in memory while the
	// database is away (default 10,000).
	AuditBacklog int
}

// Store is one project's state in a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
	pid  string
	o    Options
	addr string

	listen *listener

	timeline *timelineLog
	events   *eventsLog
	audit    *auditTrail
	bugs     *bugStore
	agents   *agentState
	confirms *confirmations
	states   *requestStates

	closeOnce sync.Once
	closeErr  error
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// IsSpec reports whether a --store value names PostgreSQL: a postgres://
// or postgresql:// URL, or "postgres" alone (the PG* environment
// variables say the rest).
func IsSpec(spec string) bool {
	return spec == "postgres" || strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://")
}

// ConnectError is a database that could not be reached at start.
type ConnectError struct {
	Addr string
	Err  error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("cannot reach the PostgreSQL store at %s: %v", e.Addr, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Config parses a spec into a pool configuration (PG* variables fill what
// the spec leaves out, as psql does) and names its address.
func Config(spec string) (*pgxpool.Config, string, error) {
	conn := spec
	if spec == "postgres" {
		conn = ""
	}
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		return nil, "", fmt.Errorf("--store: not a PostgreSQL address: %w", err)
	}
	cc := cfg.ConnConfig
	host := cc.Host
	if !strings.HasPrefix(host, "/") {
		host = net.JoinHostPort(host, fmt.Sprint(cc.Port))
	} else {
		host = fmt.Sprintf("%s (socket, port %d)", host, cc.Port)
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = 5 * time.Second
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	return cfg, host + "/" + cc.Database, nil
}

// Open connects to the database spec names, applies the schema's missing
// migrations, and opens project o.ProjectID. A database that cannot be
// reached is a *ConnectError naming its address.
func Open(ctx context.Context, spec string, o Options) (*Store, error) {
	if o.ProjectID == "" {
		return nil, errors.New("a PostgreSQL store needs the project id: --pid (or TOOLHOST_PID) is the tenant key")
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.RetryFor <= 0 {
		o.RetryFor = 5 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.AuditBacklog <= 0 {
		o.AuditBacklog = 10_000
	}
	cfg, addr, err := Config(spec)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, &ConnectError{Addr: addr, Err: err}
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout+time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, &ConnectError{Addr: addr, Err: err}
	}
	if _, _, err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, pid: o.ProjectID, o: o, addr: addr}
	// The keys of writes long done: a store that cannot prune now prunes
	// at its next start.
	_, _ = pool.Exec(ctx, `DELETE FROM done_writes WHERE pid = $1 AND at < $2`, o.ProjectID, time.Now().Add(-doneWritesKept))
	s.listen = newListener(s)
	s.timeline = &timelineLog{s: s}
	s.events = &eventsLog{s: s}
	s.audit = newAuditTrail(s)
	s.bugs = &bugStore{s: s}
	s.agents = &agentState{s: s}
	s.confirms = &confirmations{s: s}
	s.states = &requestStates{s: s}
	return s, nil
}

func (s *Store) Timeline() store.Timeline           { return s.timeline }
func (s *Store) Events() store.Events               { return s.events }
func (s *Store) Audit() store.Audit                 { return s.audit }
func (s *Store) Bugs() store.Bugs                   { return s.bugs }
func (s *Store) Agents() store.AgentState           { return s.agents }
func (s *Store) Confirmations() store.Confirmations { return s.confirms }
func (s *Store) RequestStates() confirm.StateStore  { return s.states }

// Describe names the database and the project.
func (s *Store) Describe() string { return "postgres " + s.addr + " project " + s.pid }

// Close flushes the audit rows still in memory and closes the
// connections; safe to call twice.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.audit.close()
		s.listen.close()
		s.pool.Close()
	})
	return s.closeErr
}

// Schema reports the database's schema version.
func (s *Store) Schema(ctx context.Context) (Status, error) {
	v, err := readVersion(ctx, s.pool)
	return Status{Version: v, Want: SchemaVersion()}, s.classify(err)
}

// newKey returns the key of one logical write.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// unreachable reports whether err says the database is not there (or not
// now): a connection that failed or dropped, a server shutting down or
// starting, as opposed to an answer about the query.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, cannot connect now
			pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) || strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "connection reset")
}

// sentNothing reports whether err came before the statement reached the
// database (a connection that could not be made, a write that sent no
// byte): such a try certainly stored nothing.
func sentNothing(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || pgconn.SafeToRetry(err)
}

// classify makes an unreachable database's error a store.UnavailableError.
func (s *Store) classify(err error) error { return s.unavailable(err, false) }

// unavailable is classify for a write: maybe says that a try's commit may
// have gone through unanswered.
func (s *Store) unavailable(err error, maybe bool) error {
	if err == nil || !unreachable(err) || store.IsUnavailable(err) {
		return err
	}
	return s.away(err, maybe)
}

// away is the error of a write the database was not there for.
func (s *Store) away(err error, maybe bool) error {
	return &store.UnavailableError{Store: "PostgreSQL at " + s.addr, MaybeStored: maybe, Err: err}
}

// tx runs fn in a transaction, again with backoff while the database
// cannot be reached (for up to RetryFor), and returns what the last try
// returned (a store.UnavailableError when the database stayed away). fn
// must find its own earlier write by its key: a try whose commit's answer
// was lost may have committed. A write that raced an earlier try of
// itself (the unique key of done_writes) is tried again, and finds it.
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.retry(ctx, func() (bool, error) {
		for {
			committing, err := s.tryTx(ctx, fn)
			if raced(err) {
				continue
			}
			return committing && !sentNothing(err), err
		}
	})
}

// tryTx runs fn in one transaction; committing says that the error came
// from the commit (before it, nothing was stored).
func (s *Store) tryTx(ctx context.Context, fn func(tx pgx.Tx) error) (committing bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	if err := fn(tx); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

// retry runs try again with backoff while the database cannot be reached
// (for up to RetryFor); try must find its own earlier write by its key,
// and says whether its error may have come after its commit went out. A
// write that stays unanswered is a store.UnavailableError, MaybeStored
// when a try may have committed and no later one was answered.
func (s *Store) retry(ctx context.Context, try func() (maybeStored bool, err error)) error {
	deadline := time.Now().Add(s.o.RetryFor)
	wait := 20 * time.Millisecond
	maybe := false
	for {
		m, err := try()
		if err != nil && unreachable(err) {
			maybe = maybe || m
		}
		if err == nil || !unreachable(err) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return s.unavailable(err, maybe)
		}
		select {
		case <-ctx.Done():
			return s.unavailable(err, maybe)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// raced reports a unique violation on done_writes: two tries of one write
// ran at once (the first still running when the second began); the next
// try finds the first's.
func raced(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "done_writes_pkey"
}

// doneWrite reads what the write of key answered when it committed, into
// result: found false when no try of it did.
func doneWrite(ctx context.Context, tx pgx.Tx, pid, key string, result any) (bool, error) {
	var doc string
	err := tx.QueryRow(ctx, `SELECT result FROM done_writes WHERE pid = $1 AND key = $2`, pid, key).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal([]byte(doc), result)
}

// markDone records, in the write's transaction, that the write of key is
// done and what it answered.
func markDone(ctx context.Context, tx pgx.Tx, pid, key string, result any) error {
	doc, err := json.Marshal(result)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO done_writes (pid, key, result) VALUES ($1, $2, $3)`, pid, key, string(doc))
	return err
}

// doneWritesKept is how long a write's key is kept: far longer than a
// write is retried (RetryFor).
const doneWritesKept = 24 * time.Hour

// notify tells the project's listeners (on every machine) what changed,
// delivered when the transaction commits.
func notify(ctx context.Context, tx pgx.Tx, pid, what, agent string) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify('toolhost', $1)`, pid+"\x1f"+what+"\x1f"+agent)
	return err
}
