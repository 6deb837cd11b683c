package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// TestUnreachableAtStart: a database that is not there is a clear error at
// once, naming the address.
func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	_, err := pgstore.Open(context.Background(), "postgres://toolhost@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", pgstore.Options{ProjectID: "p"})
	var ce *pgstore.ConnectError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "127.0.0.1:1/none") {
		t.Fatalf("Open = %v, want a ConnectError naming 127.0.0.1:1/none", err)
	}
	if _, err := pgstore.Open(context.Background(), "postgres://x@127.0.0.1:1/db", pgstore.Options{}); err == nil || !strings.Contains(err.Error(), "--pid") {
		t.Fatalf("Open without a project id = %v, want one naming --pid", err)
	}
}

// TestDatabaseRestart: while the database is down a write fails with the
// retryable unavailable error (fault.Unavailable, a message that names the
// store and not the driver), an audit row waits in memory; once the
// database is back the same store writes again, the waiting row lands in
// order, and the chain verifies.
func TestDatabaseRestart(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	url := c.CreateDB(t, "restart")
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: "p", RetryFor: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(id string) error {
		return s.Audit().Write(&audit.Row{TS: time.Now().UTC(), CallID: id, Agent: "pm", Tool: "echo", Status: audit.StatusOK})
	}
	if err := write("before"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "before", CallID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "down", CallID: "c2"})
	var rej fault.Rejection
	if !store.IsUnavailable(err) || !errors.As(err, &rej) || rej.RejectionKind() != fault.Unavailable || strings.Contains(err.Error(), "dial") {
		t.Fatalf("append while down = %v, want the store's unavailable error", err)
	}
	var de *audit.DeferredError
	if err := write("while-down"); !errors.As(err, &de) {
		t.Fatalf("audit row while down = %v, want it kept for later", err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = s.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "back", CallID: "c3"})
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("append after the restart: %v", err)
	}
	rows := func() []string {
		var ids []string
		if _, err := s.Audit().EachLine(ctx, audit.Filter{}, func(r *audit.Row, _ []byte) error { ids = append(ids, r.CallID); return nil }); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	// The waiting row lands by itself; then rows go straight in again.
	for deadline := time.Now().Add(time.Minute); !slices.Contains(rows(), "while-down"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the row kept while the database was down did not land within a minute: %v", rows())
		}
	}
	if err := write("after"); err != nil {
		t.Fatal(err)
	}
	ids := rows()
	if strings.Join(ids, " ") != "before while-down after" {
		t.Fatalf("rows %v, want before while-down after: one lost, doubled or out of order", ids)
	}
	v, err := s.Audit().Verify(ctx)
	if err != nil || v.Problem != nil {
		t.Fatalf("verify %+v %v", v, err)
	}
	var msgs []string
	if _, err := s.Timeline().Each(ctx, func(e store.TimelineEntry) error { msgs = append(msgs, e.Message); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(msgs, " ") != "before back" {
		t.Fatalf("timeline %v, want before back (the failed append told so and wrote nothing)", msgs)
	}
}

// TestSameEntryOfACallStoredOnce: the same entry of the same call
// appended again (what a retry after a lost answer does) is stored once
// and gets the seq first given; the call's next entry is another.
func TestSameEntryOfACallStoredOnce(t *testing.T) {
	t.Parallel()
	_, url := pgtest.Shared(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: "retry"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := store.TimelineEntry{Kind: "k", Message: "once", CallID: "call-1", Data: map[string]any{"a": 1.0}}
	a, err := s.Timeline().Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Timeline().Append(ctx, e)
	if err != nil || b != a {
		t.Fatalf("retry got seq %d (%v), want %d again", b, err, a)
	}
	e.Nth = 1
	if c, err := s.Timeline().Append(ctx, e); err != nil || c == a {
		t.Fatalf("the call's second entry got seq %d (%v): it is another entry", c, err)
	}
}

// lostAnswer is a store whose connections go through a proxy that loses
// the answer to a commit on demand, and a store straight to the database
// that looks at what was stored.
type lostAnswer struct {
	px      *pgtest.Proxy
	through *pgstore.Store
	direct  *pgstore.Store
}

func newLostAnswer(t *testing.T, pid string, retryFor time.Duration) *lostAnswer {
	c, url := pgtest.Shared(t)
	px := c.Proxy(t)
	ctx := context.Background()
	through, err := pgstore.Open(ctx, px.Route(url), pgstore.Options{ProjectID: pid, RetryFor: retryFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { through.Close() })
	direct, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: pid})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	return &lostAnswer{px: px, through: through, direct: direct}
}

// waitStored waits (a minute at most) until stored says the database
// holds the write whose answer is being lost.
func waitStored(t *testing.T, what string, stored func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !stored(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s not committed within a minute", what)
		}
	}
}

func timelineMessages(t *testing.T, s store.Store) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	if _, err := s.Timeline().Each(context.Background(), func(e store.TimelineEntry) error {
		out[e.Message] = append(out[e.Message], e.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLostCommitAnswerTimeline: an entry whose commit went through and
// whose answer was lost, while the database then stays away longer than
// the store retries, is told "may have been stored" (not "not stored");
// the same entry appended again once the database is back gets the seq
// it was stored with, once. A write that never reached the database is
// told it was not stored, and it was not.
func TestLostCommitAnswerTimeline(t *testing.T) {
	t.Parallel()
	la := newLostAnswer(t, "lost-timeline", 300*time.Millisecond)
	ctx := context.Background()
	// The project's first entry makes its head (a statement of its own).
	if _, err := la.through.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "first", CallID: "call-first"}); err != nil {
		t.Fatal(err)
	}
	e := store.TimelineEntry{Kind: "k", Message: "lost-answer-entry", CallID: "call-lost"}
	lost := la.px.LoseAnswerAfter(e.Message)
	errc := make(chan error, 1)
	go func() {
		_, err := la.through.Timeline().Append(ctx, e)
		errc <- err
	}()
	<-lost
	waitStored(t, "the entry", func() bool { return len(timelineMessages(t, la.direct)[e.Message]) == 1 })
	la.px.Down()
	err := <-errc
	var ue *store.UnavailableError
	if !errors.As(err, &ue) || !ue.MaybeStored || !strings.Contains(err.Error(), "may have been stored") {
		t.Fatalf("append whose commit's answer was lost = %v, want unavailable, maybe stored", err)
	}
	// Not reached at all: told so, and nothing stored.
	_, err = la.through.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "never-sent", CallID: "call-down"})
	if !errors.As(err, &ue) || ue.MaybeStored || !strings.Contains(err.Error(), "was not stored") {
		t.Fatalf("append while the database is away = %v, want unavailable, not stored", err)
	}
	la.px.Up()
	seq, err := la.through.Timeline().Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	got := timelineMessages(t, la.direct)
	if want := []int64{seq}; !slices.Equal(got[e.Message], want) || len(got["never-sent"]) != 0 {
		t.Fatalf("timeline %v: want %s once at seq %d (the retry's answer) and no never-sent", got, e.Message, seq)
	}
}

// TestLostCommitAnswerAgentState: an update whose commit's answer was lost
// is tried again after another machine changed the same step; the retry
// writes nothing (the other machine's change is not overwritten by the
// retry's) and hands fn what the update wrote.
func TestLostCommitAnswerAgentState(t *testing.T) {
	t.Parallel()
	la := newLostAnswer(t, "lost-agent", 5*time.Minute)
	ctx := context.Background()
	// set sets the step's status, as update_todo_item does, and says what
	// the list then holds.
	set := func(status, note string, seen *string) func(*store.Todolist, bool) error {
		return func(tl *store.Todolist, _ bool) error {
			tl.Items[0].Status, tl.Items[0].Note = status, note
			*seen = tl.Items[0].Status + " " + tl.Items[0].Note
			return nil
		}
	}
	if err := la.direct.Agents().UpdateTodolist(ctx, "coder", func(tl *store.Todolist, _ bool) error {
		tl.Items = []store.TodoItem{{ID: "build", Status: "todo"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lost := la.px.LoseAnswerAfter("note-of-the-lost-answer", "commit")
	var seen string
	errc := make(chan error, 1)
	go func() {
		errc <- la.through.Agents().UpdateTodolist(ctx, "coder", set("doing", "note-of-the-lost-answer", &seen))
	}()
	status := func() string {
		tl, err := la.direct.Agents().Todolist(ctx, "coder")
		if err != nil || tl == nil {
			return ""
		}
		return tl.Items[0].Status + " " + tl.Items[0].Note
	}
	<-lost
	waitStored(t, "the update", func() bool { return status() == "doing note-of-the-lost-answer" })
	la.px.Down()
	var other string
	if err := la.direct.Agents().UpdateTodolist(ctx, "coder", set("done", "by machine B", &other)); err != nil {
		t.Fatal(err)
	}
	la.px.Up()
	if err := <-errc; err != nil {
		t.Fatalf("the update tried again: %v", err)
	}
	if got := status(); got != "done by machine B" || seen != "doing note-of-the-lost-answer" {
		t.Fatalf("step %q, the update saw %q: want machine B's later change kept, and the update's own", got, seen)
	}
}

// TestLostCommitAnswerBugTransition: a transition whose commit's answer
// was lost is tried again after another machine moved the bug on; the
// retry answers with the transition it made instead of trying the move
// again from the new status (which the state machine refuses).
func TestLostCommitAnswerBugTransition(t *testing.T) {
	t.Parallel()
	la := newLostAnswer(t, "lost-bug", 5*time.Minute)
	ctx := context.Background()
	op, err := la.direct.Bugs().Open(ctx, bugs.NewBug{Title: "Crash on save", UnitID: "api", Severity: "major",
		Evidence: bugs.Evidence{Test: "save > works"}, By: "tester", At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	id := op.Bug.ID
	lost := la.px.LoseAnswerAfter("note-of-the-lost-answer", "commit")
	type moved struct {
		tr  bugs.Transition
		err error
	}
	done := make(chan moved, 1)
	go func() {
		_, tr, err := la.through.Bugs().Transition(ctx, id, "triaged", "bug-triager", "note-of-the-lost-answer", time.Now().UTC())
		done <- moved{tr, err}
	}()
	<-lost
	waitStored(t, "the transition", func() bool {
		b, err := la.direct.Bugs().Get(ctx, id)
		return err == nil && b.Status == "triaged"
	})
	la.px.Down()
	if _, _, err := la.direct.Bugs().Transition(ctx, id, "fixing", "coder", "", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	la.px.Up()
	m := <-done
	if m.err != nil || m.tr.From != "open" || m.tr.To != "triaged" {
		t.Fatalf("the transition tried again = %+v, %v; want open → triaged", m.tr, m.err)
	}
	b, err := la.direct.Bugs().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != "fixing" || len(b.History) != 2 {
		t.Fatalf("bug %s %s with history %+v: want fixing after open → triaged → fixing, each once", id, b.Status, b.History)
	}
}
