package store

import (
	"context"
	"errors"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/ndjson"
)

// Store is one project's shared state. Every method is safe for concurrent
// use, also by other processes and, for a database, other machines on the
// same project.
type Store interface {
	Timeline() Timeline
	Events() Events
	Audit() Audit
	Bugs() Bugs
	Agents() AgentState
	Confirmations() Confirmations
	// RequestStates keeps what the request states of 2026-07-28
	// multi-round-trip confirmations need (confirm.States signs them).
	RequestStates() confirm.StateStore
	// Watch calls fn for every change of the agents' states, the bugs or
	// the confirmations, from now until ctx ends: what a live view
	// re-reads. A change may be reported more than once; none is lost.
	Watch(ctx context.Context, fn func(Change)) error
	// Describe names the store for people: "files in DIR",
	// "postgres HOST:PORT/DB project P".
	Describe() string
	Close() error
}

// Change says what changed (Watch).
type Change struct {
	// What is ChangedAgent, ChangedBugs or ChangedConfirmations.
	What string
	// Agent is the agent whose state changed (ChangedAgent).
	Agent string
}

// What a Change is about.
const (
	ChangedAgent         = "agent"
	ChangedBugs          = "bugs"
	ChangedConfirmations = "confirmations"
)

// Cursor is where a follower resumes a log. Only the store that handed it
// out reads it: File for the file store, Seq for a database.
type Cursor struct {
	File *ndjson.Cursor
	Seq  int64
}

// Log is an append-only log of records of type T (the timeline, the
// events), read oldest first, newest first, and followed live.
type Log[T any] interface {
	// Each hands fn every record, oldest first, in constant memory; lines
	// that are not records are skipped and counted in the BadLines.
	Each(ctx context.Context, fn func(T) error) (ndjson.BadLines, error)
	// Backward hands fn the records newest first until it returns false,
	// and returns the cursor to Follow from, so that nothing written
	// meanwhile is lost or repeated.
	Backward(ctx context.Context, fn func(T) bool) (Cursor, error)
	// Follow hands fn every record appended after from (the end of the log
	// when from is nil), in order, until ctx ends; next resumes after it.
	Follow(ctx context.Context, from *Cursor, fn func(rec T, next Cursor) error) error
	// Lines hands fn every line of the log as stored, oldest first: what
	// `toolhost store export` copies byte for byte.
	Lines(ctx context.Context, fn func(line []byte) error) error
}

// Importer takes a project's state record by record, as stored: the
// target of `toolhost store export` (a file layout) and `store import` (a
// database). Lines keep their bytes, so the audit chain still verifies.
type Importer interface {
	TimelineLine(ctx context.Context, line []byte) error
	EventLine(ctx context.Context, line []byte) error
	// AuditLine takes a line of the trail with the file it belongs to.
	AuditLine(ctx context.Context, file string, line []byte) error
	Bug(ctx context.Context, b *bugs.Bug) error
	Todolist(ctx context.Context, agent string, tl *Todolist) error
	Runtime(ctx context.Context, agent string, rs *RuntimeState) error
	Confirmation(ctx context.Context, e *confirm.Entry) error
	RequestStateKey(ctx context.Context, key []byte) error
	// Done finishes the import (counters, indexes, checkpoints).
	Done(ctx context.Context) error
}

// Timeline is the agents' shared log.
type Timeline interface {
	// Append stores e with the next seq of the project and returns it. An
	// entry of the same call (call_id), at the same place among the call's
	// entries and with the same content, is stored once: a retry after a
	// lost answer returns the seq first given.
	Append(ctx context.Context, e TimelineEntry) (seq int64, err error)
	Log[TimelineEntry]
}

// Events is the events log.
type Events interface {
	Emit(ctx context.Context, e Event) error
	Log[Event]
}

// Audit is the audit trail: one row per call, chained by hash (the rule of
// internal/audit, whatever the store), so `toolhost audit verify` checks
// either store.
type Audit interface {
	// Write appends a row at the end of the chain (audit.Sink). A row the
	// store could not take yet may be kept in memory and written later
	// (*audit.DeferredError).
	audit.Sink
	// Open makes the trail ready now (a new trail gets its start record),
	// so a store that cannot be written is reported at start.
	Open() error
	// EachLine hands fn the rows that pass f, oldest first, with the line
	// as stored (what the chain hashes), in constant memory.
	EachLine(ctx context.Context, f audit.Filter, fn func(r *audit.Row, line []byte) error) (ndjson.BadLines, error)
	// Stats groups the rows that pass f by tool.
	Stats(ctx context.Context, f audit.Filter) ([]audit.ToolStats, ndjson.BadLines, error)
	// Backward hands fn the rows newest first until it returns false.
	Backward(ctx context.Context, fn func(r *audit.Row) bool) (Cursor, error)
	// Follow hands fn every row appended after from.
	Follow(ctx context.Context, from *Cursor, fn func(r *audit.Row, next Cursor) error) error
	// Verify walks the whole chain (audit.Verify's rules).
	Verify(ctx context.Context) (*audit.Verification, error)
	// Lines hands fn every line of the trail as stored, in order, with
	// the name of the file it belongs to in the file layout: what
	// `toolhost store export` writes.
	Lines(ctx context.Context, fn func(file string, line []byte) error) error
}

// NoTrailError is returned by the audit readers of a project that has no
// audit trail yet; it is ErrNoTrail to errors.Is.
type NoTrailError struct {
	// Where names where the trail was looked for.
	Where string
}

func (e *NoTrailError) Error() string {
	return "no audit trail at " + e.Where + ": no call was made in this project yet, or the project (--project-dir, --pid) is wrong"
}

// Is makes errors.Is(err, ErrNoTrail) true.
func (e *NoTrailError) Is(target error) bool { return target == ErrNoTrail }

// ErrNoTrail matches every NoTrailError.
var ErrNoTrail = errors.New("no audit trail")

// Bugs is the bug tracker.
type Bugs interface {
	// Open creates a bug, or appends the evidence to the bug with the same
	// fingerprint (bugs.Fingerprint), in any status: never two bugs for one
	// fingerprint.
	Open(ctx context.Context, nb bugs.NewBug) (bugs.Opened, error)
	// Transition moves a bug along the state machine, compare-and-set on
	// its status: a *bugs.TransitionError when the move is not allowed.
	Transition(ctx context.Context, id, to, by, note string, at time.Time) (*bugs.Bug, bugs.Transition, error)
	// List answers bug_list at a cost independent of the number of bugs.
	List(ctx context.Context, q bugs.Query) (bugs.Listing, error)
	// Get returns one bug; bugs.ErrNotFound when there is none.
	Get(ctx context.Context, id string) (*bugs.Bug, error)
	// Summaries returns every bug's summary by id, never writing (a live
	// view's read).
	Summaries(ctx context.Context) ([]bugs.Summary, error)
	// Each hands fn every bug by id (and names the unreadable apart).
	Each(ctx context.Context, fn func(*bugs.Bug) error) ([]bugs.Unreadable, error)
}

// AgentState keeps each agent's todolist and runtime state. Updates are
// read-modify-write: fn gets the current record (zero, existed false, when
// there is none) and changes it in place; an error from fn writes nothing
// and is returned as is. Two updates never lose one another. fn may run
// more than once (a compare-and-set lost to another writer); when the
// answer to an update's commit was lost, its retry hands fn the record as
// that update wrote it and writes nothing, so fn's outputs must follow
// from the record it gets (the updates are setters).
type AgentState interface {
	Todolist(ctx context.Context, agent string) (*Todolist, error)
	UpdateTodolist(ctx context.Context, agent string, fn func(tl *Todolist, existed bool) error) error
	Runtime(ctx context.Context, agent string) (*RuntimeState, error)
	UpdateRuntime(ctx context.Context, agent string, fn func(s *RuntimeState, existed bool) error) error
	// Agents lists the agents that have any state, sorted.
	Agents(ctx context.Context) ([]string, error)
}

// Confirmations keeps the human confirmations (the rules are
// internal/confirm's): a pending entry per call that waits, decided by a
// human, consumed by the identical call exactly once.
type Confirmations interface {
	// Claim binds a session id to its agent, or refuses it with a
	// *confirm.SessionTakenError when another agent holds it; Check and
	// Take refuse such a session the same way.
	Claim(ctx context.Context, session, agent string) error
	Check(ctx context.Context, c confirm.Call) (confirm.Result, error)
	Take(ctx context.Context, c confirm.Call) (confirm.Result, error)
	Decide(ctx context.Context, id string, approve bool) (*confirm.Entry, error)
	List(ctx context.Context) ([]*confirm.Entry, error)
}
