package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/store"
)

// Project is one project of the implementation under test: Open returns a
// new store on it each time (another process of the same project), closed
// when the test ends.
type Project interface {
	Open(t testing.TB) store.Store
}

// NewProject makes a new, empty project.
type NewProject func(t testing.TB) Project

// Run runs the whole contract.
func Run(t *testing.T, newProject NewProject) {
	tests := []struct {
		name string
		fn   func(*testing.T, Project)
	}{
		{"TimelineSeqStrictlyIncreasingAcrossStores", timelineSeq},
		{"TimelineBackwardThenFollow", timelineFollow},
		{"EventsEmitReadFollow", eventsLog},
		{"AuditOneChainFromSeveralStores", auditChain},
		{"AuditFilterStatsAndFollow", auditRead},
		{"BugsOneBugPerFingerprint", bugsDedupe},
		{"BugsTransitionCompareAndSet", bugsTransition},
		{"BugsListGetSummaries", bugsList},
		{"AgentStateNoLostUpdate", agentState},
		{"ConfirmationUsedOnce", confirmOnce},
		{"ConfirmationDecideAndList", confirmDecide},
		{"ConfirmationBoundToAgentAndSession", confirmBound},
		{"RequestStatesOneKeyOneUse", requestStates},
		{"WatchReportsChanges", watch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newProject(t))
		})
	}
}

var ctx = context.Background()

// writers is how many stores (processes) write at once, and each's share.
const (
	writers   = 4
	perWriter = 25
)

// parallel runs fn(i) for i in [0, n) at once and fails on the first error.
func parallel(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func timelineSeq(t *testing.T, p Project) {
	stores := make([]store.Store, writers)
	for i := range stores {
		stores[i] = p.Open(t)
	}
	got := make([][]int64, writers)
	parallel(t, writers, func(i int) error {
		for j := range perWriter {
			seq, err := stores[i].Timeline().Append(ctx, store.TimelineEntry{TS: time.Now().UTC(), Agent: "pm",
				CallID: fmt.Sprintf("c-%d-%d", i, j), Kind: "test", Message: fmt.Sprintf("m %d %d", i, j)})
			if err != nil {
				return err
			}
			got[i] = append(got[i], seq)
		}
		return nil
	})
	var all []int64
	for i, seqs := range got {
		if !slices.IsSorted(seqs) {
			t.Errorf("writer %d got seqs out of order: %v", i, seqs)
		}
		all = append(all, seqs...)
	}
	slices.Sort(all)
	for i, s := range all {
		if s != int64(i+1) {
			t.Fatalf("seqs %v: want 1..%d, each once", all, writers*perWriter)
		}
	}
	var read []store.TimelineEntry
	bad, err := p.Open(t).Timeline().Each(ctx, func(e store.TimelineEntry) error { read = append(read, e); return nil })
	if err != nil || bad.Count != 0 {
		t.Fatalf("Each: %v, bad %v", err, bad)
	}
	if len(read) != writers*perWriter {
		t.Fatalf("Each read %d entries, want %d", len(read), writers*perWriter)
	}
	msgs := map[string]bool{}
	for i, e := range read {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d: not in seq order", i, e.Seq)
		}
		msgs[e.Message] = true
	}
	if len(msgs) != writers*perWriter {
		t.Fatalf("%d distinct messages, want %d: an entry was lost or doubled", len(msgs), writers*perWriter)
	}
}

func timelineFollow(t *testing.T, p Project) {
	s := p.Open(t)
	tl := s.Timeline()
	for i := range 5 {
		if _, err := tl.Append(ctx, store.TimelineEntry{Kind: "k", Message: fmt.Sprint(i), CallID: fmt.Sprint("c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var newest []int64
	cur, err := tl.Backward(ctx, func(e store.TimelineEntry) bool {
		newest = append(newest, e.Seq)
		return len(newest) < 3
	})
	if err != nil || !slices.Equal(newest, []int64{5, 4, 3}) {
		t.Fatalf("Backward = %v, %v; want 5 4 3", newest, err)
	}
	// Entries appended by another store after Backward are followed, each once.
	other := p.Open(t).Timeline()
	for i := 5; i < 8; i++ {
		if _, err := other.Append(ctx, store.TimelineEntry{Kind: "k", Message: fmt.Sprint(i), CallID: fmt.Sprint("c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var followed []int64
	err = tl.Follow(fctx, &cur, func(e store.TimelineEntry, _ store.Cursor) error {
		followed = append(followed, e.Seq)
		if len(followed) == 3 {
			cancel()
		}
		return nil
	})
	if err != nil || !slices.Equal(followed, []int64{6, 7, 8}) {
		t.Fatalf("Follow = %v, %v; want 6 7 8", followed, err)
	}
}

func eventsLog(t *testing.T, p Project) {
	s := p.Open(t)
	cur, err := s.Events().Backward(ctx, func(store.Event) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan []string)
	go func() {
		var kinds []string
		_ = s.Events().Follow(fctx, &cur, func(e store.Event, _ store.Cursor) error {
			kinds = append(kinds, e.Kind)
			if len(kinds) == 3 {
				cancel()
			}
			return nil
		})
		done <- kinds
	}()
	w := p.Open(t).Events()
	for _, k := range []string{"a.one", "a.two", "a.three"} {
		if err := w.Emit(ctx, store.Event{TS: time.Now().UTC(), Kind: k, Agent: "pm", CallID: "c", Payload: map[string]any{"k": k}}); err != nil {
			t.Fatal(err)
		}
	}
	if kinds := <-done; !slices.Equal(kinds, []string{"a.one", "a.two", "a.three"}) {
		t.Fatalf("followed %v", kinds)
	}
	var all []store.Event
	if _, err := s.Events().Each(ctx, func(e store.Event) error { all = append(all, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[1].Kind != "a.two" {
		t.Fatalf("Each = %+v", all)
	}
	var pl map[string]string
	b, _ := json.Marshal(all[2].Payload)
	if json.Unmarshal(b, &pl) != nil || pl["k"] != "a.three" {
		t.Fatalf("payload came back as %s", b)
	}
}

func row(agent, tool string, status audit.Status, i int) *audit.Row {
	return &audit.Row{TS: time.Now().UTC(), CallID: fmt.Sprintf("call-%s-%d", agent, i), SessionID: "s-" + agent, Agent: agent,
		Tool: tool, Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), Status: status, DurationMS: float64(i)}
}

func auditChain(t *testing.T, p Project) {
	stores := make([]store.Store, writers)
	for i := range stores {
		stores[i] = p.Open(t)
		if err := stores[i].Audit().Open(); err != nil {
			t.Fatal(err)
		}
	}
	parallel(t, writers, func(i int) error {
		for j := range perWriter {
			if err := stores[i].Audit().Write(row(fmt.Sprint("a", i), "echo", audit.StatusOK, j)); err != nil {
				return err
			}
		}
		return nil
	})
	for _, s := range stores {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r := p.Open(t).Audit()
	v, err := r.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Problem != nil || v.Rows != writers*perWriter {
		t.Fatalf("verify: %d rows, problem %v; want %d rows, none", v.Rows, v.Problem, writers*perWriter)
	}
	seen := map[string]bool{}
	var last int64
	if _, err := r.EachLine(ctx, audit.Filter{}, func(row *audit.Row, line []byte) error {
		if seen[row.CallID] {
			return fmt.Errorf("row %s twice", row.CallID)
		}
		seen[row.CallID] = true
		if row.Seq <= last {
			return fmt.Errorf("seq %d after %d", row.Seq, last)
		}
		last = row.Seq
		var back audit.Row
		if err := json.Unmarshal(line, &back); err != nil || back.CallID != row.CallID {
			return fmt.Errorf("line %s is not the row", line)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*perWriter {
		t.Fatalf("%d rows read, want %d", len(seen), writers*perWriter)
	}
	lines := 0
	if err := r.Lines(ctx, func(_ string, _ []byte) error { lines++; return nil }); err != nil || int64(lines) != v.Lines {
		t.Fatalf("Lines gave %d lines (%v); the chain has %d", lines, err, v.Lines)
	}
}

func auditRead(t *testing.T, p Project) {
	s := p.Open(t)
	a := s.Audit()
	if _, err := a.Verify(ctx); !errors.Is(err, store.ErrNoTrail) {
		t.Fatalf("Verify of a new project = %v, want ErrNoTrail", err)
	}
	if err := a.Open(); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		st := audit.StatusOK
		if i%3 == 0 {
			st = audit.StatusError
		}
		if err := a.Write(row("pm", fmt.Sprint("t", i%2), st, i)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if _, err := a.EachLine(ctx, audit.Filter{Tool: "t0"}, func(r *audit.Row, _ []byte) error { got = append(got, r.CallID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"call-pm-0", "call-pm-2", "call-pm-4"}) {
		t.Fatalf("filter tool t0 = %v", got)
	}
	stats, _, err := a.Stats(ctx, audit.Filter{})
	if err != nil || len(stats) != 2 || stats[0].Tool != "t0" || stats[0].Count != 3 || stats[0].Failed != 1 || stats[1].Failed != 1 {
		t.Fatalf("stats = %+v, %v", stats, err)
	}
	var newest []string
	cur, err := a.Backward(ctx, func(r *audit.Row) bool { newest = append(newest, r.CallID); return len(newest) < 2 })
	if err != nil || !slices.Equal(newest, []string{"call-pm-5", "call-pm-4"}) {
		t.Fatalf("Backward = %v, %v", newest, err)
	}
	if err := p.Open(t).Audit().Write(row("qa", "t9", audit.StatusOK, 9)); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var followed []string
	_ = a.Follow(fctx, &cur, func(r *audit.Row, _ store.Cursor) error {
		followed = append(followed, r.CallID)
		cancel()
		return nil
	})
	if !slices.Equal(followed, []string{"call-qa-9"}) {
		t.Fatalf("Follow = %v", followed)
	}
}

func newBug(title, test string) bugs.NewBug {
	return bugs.NewBug{Title: title, UnitID: "api", Severity: "major", Evidence: bugs.Evidence{Test: test, Log: "boom"}, By: "tester", At: time.Now().UTC()}
}

func bugsDedupe(t *testing.T, p Project) {
	stores := make([]store.Store, writers)
	for i := range stores {
		stores[i] = p.Open(t)
	}
	var created atomic.Int32
	ids := make([]string, writers*3)
	parallel(t, writers, func(i int) error {
		for j := range 3 {
			nb := newBug(fmt.Sprintf("Login returns %d", j), "auth > login")
			nb.Evidence.Log = fmt.Sprintf("boom from %d", i)
			res, err := stores[i].Bugs().Open(ctx, nb)
			if err != nil {
				return err
			}
			if !res.Duplicate {
				created.Add(1)
			}
			ids[i*3+j] = res.Bug.ID
		}
		return nil
	})
	if created.Load() != 3 {
		t.Fatalf("%d bugs created for 3 fingerprints", created.Load())
	}
	for j := range 3 {
		for i := range writers {
			if ids[i*3+j] != ids[j] {
				t.Fatalf("fingerprint %d got ids %s and %s", j, ids[j], ids[i*3+j])
			}
		}
	}
	b, err := p.Open(t).Bugs().Get(ctx, ids[0])
	if err != nil || len(b.Evidence) != writers {
		t.Fatalf("bug %s: %d evidence (%v), want one per writer (%d)", ids[0], len(b.Evidence), err, writers)
	}
	// The same evidence again appends nothing.
	res, err := stores[0].Bugs().Open(ctx, newBug("login returns 0!", "auth > login"))
	if err != nil || !res.Duplicate || res.Bug.ID != ids[0] {
		t.Fatalf("normalized title: %+v, %v", res, err)
	}
}

func bugsTransition(t *testing.T, p Project) {
	a, b := p.Open(t), p.Open(t)
	res, err := a.Bugs().Open(ctx, newBug("crash", "t"))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Bug.ID
	var won atomic.Int32
	parallel(t, writers, func(i int) error {
		s := a
		if i%2 == 1 {
			s = b
		}
		_, _, err := s.Bugs().Transition(ctx, id, bugs.StatusTriaged, fmt.Sprint("w", i), "", time.Now().UTC())
		switch {
		case err == nil:
			won.Add(1)
		case errors.Is(err, bugs.ErrTransition):
		default:
			return err
		}
		return nil
	})
	if won.Load() != 1 {
		t.Fatalf("%d transitions open → triaged succeeded, want exactly 1", won.Load())
	}
	bug, tr, err := b.Bugs().Transition(ctx, id, bugs.StatusFixing, "coder", "on it", time.Now().UTC())
	if err != nil || tr.From != bugs.StatusTriaged || bug.Status != bugs.StatusFixing || len(bug.History) != 2 {
		t.Fatalf("triaged → fixing: %+v %+v %v", bug, tr, err)
	}
	var te *bugs.TransitionError
	if _, _, err := a.Bugs().Transition(ctx, id, bugs.StatusClosed, "x", "", time.Now().UTC()); !errors.As(err, &te) || !slices.Equal(te.Allowed, []string{bugs.StatusFixed}) {
		t.Fatalf("fixing → closed = %v, want a TransitionError allowing fixed", err)
	}
	if _, _, err := a.Bugs().Transition(ctx, "BUG-9999", bugs.StatusTriaged, "x", "", time.Now().UTC()); !errors.Is(err, bugs.ErrNotFound) {
		t.Fatalf("unknown bug = %v, want ErrNotFound", err)
	}
}

func bugsList(t *testing.T, p Project) {
	s := p.Open(t)
	sev := []string{"minor", "blocker", "major"}
	for i := range 9 {
		nb := newBug(fmt.Sprint("bug ", i), fmt.Sprint("t", i))
		nb.Severity = sev[i%3]
		nb.UnitID = []string{"api", "web"}[i%2]
		if _, err := s.Bugs().Open(ctx, nb); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Bugs().Transition(ctx, "BUG-0002", bugs.StatusTriaged, "x", "", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	l, err := p.Open(t).Bugs().List(ctx, bugs.Query{Status: bugs.StatusOpen, Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range l.Bugs {
		got = append(got, b.ID+":"+b.Severity)
	}
	// blocker first (BUG-0005, BUG-0008; BUG-0002 is triaged), then major by id.
	if l.Total != 8 || !slices.Equal(got, []string{"BUG-0005:blocker", "BUG-0008:blocker", "BUG-0003:major", "BUG-0006:major"}) {
		t.Fatalf("list = total %d %v", l.Total, got)
	}
	l, err = s.Bugs().List(ctx, bugs.Query{UnitID: "web", Severity: "major", Limit: 10})
	if err != nil || l.Total != 1 || l.Bugs[0].ID != "BUG-0006" {
		t.Fatalf("unit web, major = %+v, %v", l, err)
	}
	if _, err := s.Bugs().Get(ctx, "BUG-0099"); !errors.Is(err, bugs.ErrNotFound) {
		t.Fatalf("Get unknown = %v", err)
	}
	sums, err := s.Bugs().Summaries(ctx)
	if err != nil || len(sums) != 9 || sums[1].ID != "BUG-0002" || sums[1].Status != bugs.StatusTriaged || sums[8].ID != "BUG-0009" {
		t.Fatalf("summaries = %+v, %v", sums, err)
	}
	n := 0
	if bad, err := s.Bugs().Each(ctx, func(b *bugs.Bug) error {
		n++
		if b.ID != bugs.FormatID(n) {
			return fmt.Errorf("bug %d of Each is %s", n, b.ID)
		}
		return nil
	}); err != nil || len(bad) != 0 || n != 9 {
		t.Fatalf("Each: %d bugs, %v, bad %v", n, err, bad)
	}
}

func agentState(t *testing.T, p Project) {
	stores := make([]store.Store, writers)
	for i := range stores {
		stores[i] = p.Open(t)
	}
	if tl, err := stores[0].Agents().Todolist(ctx, "pm"); tl != nil || err != nil {
		t.Fatalf("todolist of a new project = %v, %v", tl, err)
	}
	parallel(t, writers, func(i int) error {
		for j := range perWriter {
			err := stores[i].Agents().UpdateTodolist(ctx, "pm", func(tl *store.Todolist, _ bool) error {
				tl.Agent = "pm"
				tl.Items = append(tl.Items, store.TodoItem{ID: fmt.Sprintf("w%d-%d", i, j), Status: "todo"})
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	tl, err := p.Open(t).Agents().Todolist(ctx, "pm")
	if err != nil || tl == nil || len(tl.Items) != writers*perWriter {
		t.Fatalf("%v items after %d updates (%v): an update was lost", tl, writers*perWriter, err)
	}
	refused := errors.New("refused")
	if err := stores[0].Agents().UpdateTodolist(ctx, "pm", func(tl *store.Todolist, existed bool) error {
		if !existed {
			return errors.New("existed is false")
		}
		tl.Items = nil
		return refused
	}); !errors.Is(err, refused) {
		t.Fatalf("a refusing update returned %v", err)
	}
	if tl, _ := stores[1].Agents().Todolist(ctx, "pm"); len(tl.Items) != writers*perWriter {
		t.Fatalf("a refused update wrote %d items", len(tl.Items))
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := stores[2].Agents().UpdateRuntime(ctx, "qa", func(s *store.RuntimeState, existed bool) error {
		s.Agent, s.Phase, s.Data, s.UpdatedAt = "qa", "testing", map[string]any{"n": 1.0}, now
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rs, err := stores[3].Agents().Runtime(ctx, "qa")
	if err != nil || rs == nil || rs.Phase != "testing" || rs.Data["n"] != 1.0 || !rs.UpdatedAt.Equal(now) {
		t.Fatalf("runtime = %+v, %v", rs, err)
	}
	agents, err := stores[0].Agents().Agents(ctx)
	if err != nil || !slices.Equal(agents, []string{"pm", "qa"}) {
		t.Fatalf("agents = %v, %v", agents, err)
	}
}

func confirmCall(callID string) confirm.Call {
	return confirm.Call{SessionID: "sess-1", Agent: "pm", Tool: "write_chapter", CallID: callID,
		Args: json.RawMessage(`{"b":1,"a":"x"}`), Preview: json.RawMessage(`{"a":"x","b":1}`), TTL: time.Minute}
}

func confirmOnce(t *testing.T, p Project) {
	s := p.Open(t)
	res, err := s.Confirmations().Check(ctx, confirmCall("c1"))
	if err != nil || res.Verdict != confirm.Ask || res.Entry == nil || res.Entry.Status != confirm.Pending {
		t.Fatalf("first call = %+v, %v; want a pending confirmation", res, err)
	}
	if _, err := p.Open(t).Confirmations().Decide(ctx, res.Entry.ID, true); err != nil {
		t.Fatal(err)
	}
	stores := make([]store.Store, writers)
	for i := range stores {
		stores[i] = p.Open(t)
	}
	var ran atomic.Int32
	parallel(t, writers*2, func(i int) error {
		c := confirmCall(fmt.Sprint("retry-", i))
		c.Args = json.RawMessage(`{"a":"x","b":1}`) // the same arguments, in another order
		res, err := stores[i%writers].Confirmations().Take(ctx, c)
		if err != nil {
			return err
		}
		if res.Verdict == confirm.Run {
			ran.Add(1)
		}
		return nil
	})
	if ran.Load() != 1 {
		t.Fatalf("the approval ran %d calls, want exactly 1", ran.Load())
	}
	entries, err := s.Confirmations().List(ctx)
	if err != nil || len(entries) != 1 || entries[0].Status != confirm.Used || entries[0].Decision != confirm.Approved {
		t.Fatalf("entries = %+v, %v", entries, err)
	}
}

func confirmDecide(t *testing.T, p Project) {
	s := p.Open(t)
	first, err := s.Confirmations().Check(ctx, confirmCall("c1"))
	if err != nil {
		t.Fatal(err)
	}
	other := confirmCall("c2")
	other.Args = json.RawMessage(`{"a":"y"}`)
	second, err := s.Confirmations().Check(ctx, other)
	if err != nil || len(second.Superseded) != 1 || second.Superseded[0].ID != first.Entry.ID {
		t.Fatalf("a second call of the tool = %+v, %v; want it to supersede the first", second, err)
	}
	if _, err := s.Confirmations().Decide(ctx, first.Entry.ID, true); !errors.Is(err, confirm.ErrClosed) {
		t.Fatalf("deciding a superseded one = %v, want ErrClosed", err)
	}
	if _, err := s.Confirmations().Decide(ctx, "cf-nope", true); !errors.Is(err, confirm.ErrNotFound) {
		t.Fatalf("deciding an unknown one = %v, want ErrNotFound", err)
	}
	e, err := p.Open(t).Confirmations().Decide(ctx, second.Entry.ID, false)
	if err != nil || e.Status != confirm.Denied {
		t.Fatalf("deny = %+v, %v", e, err)
	}
	res, err := s.Confirmations().Check(ctx, other)
	if err != nil || res.Verdict != confirm.Deny {
		t.Fatalf("the denied call = %+v, %v; want Deny", res, err)
	}
	entries, err := s.Confirmations().List(ctx)
	if err != nil || len(entries) != 2 {
		t.Fatalf("list = %+v, %v", entries, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].CreatedAt.Before(entries[j].CreatedAt) })
	if entries[0].Status != confirm.Superseded || entries[1].Status != confirm.Used || entries[1].Decision != confirm.Denied {
		t.Fatalf("statuses %s %s/%s", entries[0].Status, entries[1].Status, entries[1].Decision)
	}
}

// confirmBound: a decision is the agent's own — another agent's identical
// call through the same session id is refused (the session is claimed by
// the first agent) and never consumes it; a session claimed at launch
// refuses a second agent from another store (process) at once.
func confirmBound(t *testing.T, p Project) {
	s := p.Open(t)
	res, err := s.Confirmations().Check(ctx, confirmCall("c1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Open(t).Confirmations().Decide(ctx, res.Entry.ID, true); err != nil {
		t.Fatal(err)
	}
	other := confirmCall("t1")
	other.Agent = "tester"
	var taken *confirm.SessionTakenError
	for _, try := range []func(context.Context, confirm.Call) (confirm.Result, error){p.Open(t).Confirmations().Take, p.Open(t).Confirmations().Check} {
		if _, err := try(ctx, other); !errors.As(err, &taken) || taken.Agent != "pm" {
			t.Fatalf("another agent's identical call = %v, want SessionTakenError naming pm", err)
		}
	}
	if err := p.Open(t).Confirmations().Claim(ctx, "sess-1", "tester"); !errors.As(err, &taken) {
		t.Fatalf("another agent claiming the session = %v", err)
	}
	if err := p.Open(t).Confirmations().Claim(ctx, "sess-1", "pm"); err != nil {
		t.Fatalf("the owner's claim = %v", err)
	}
	if err := p.Open(t).Confirmations().Claim(ctx, "sess-fresh", "coder"); err != nil {
		t.Fatal(err)
	}
	if err := p.Open(t).Confirmations().Claim(ctx, "sess-fresh", "pm"); !errors.As(err, &taken) || taken.Agent != "coder" {
		t.Fatalf("a second agent on a claimed session = %v", err)
	}
	if r, err := s.Confirmations().Take(ctx, confirmCall("c2")); err != nil || r.Verdict != confirm.Run {
		t.Fatalf("the owner's identical call = %+v, %v; want Run", r, err)
	}
}

func requestStates(t *testing.T, p Project) {
	stores := make([]store.Store, writers)
	for i := range stores {
		stores[i] = p.Open(t)
	}
	keys := make([][]byte, writers)
	parallel(t, writers, func(i int) error {
		k, err := stores[i].RequestStates().Key(ctx)
		keys[i] = k
		return err
	})
	for i := range keys {
		if len(keys[i]) < 32 || string(keys[i]) != string(keys[0]) {
			t.Fatalf("stores got different (or short) keys: %x / %x", keys[0], keys[i])
		}
	}
	now := time.Now().UTC()
	var used atomic.Int32
	parallel(t, writers, func(i int) error {
		err := stores[i].RequestStates().Redeem(ctx, "nonce-1", now.Add(time.Minute), now)
		switch {
		case err == nil:
			used.Add(1)
		case errors.Is(err, confirm.ErrStateReplayed):
		default:
			return err
		}
		return nil
	})
	if used.Load() != 1 {
		t.Fatalf("a nonce was redeemed %d times", used.Load())
	}
}

func watch(t *testing.T, p Project) {
	s := p.Open(t)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	got := make(chan store.Change, 64)
	go func() { _ = s.Watch(wctx, func(c store.Change) { got <- c }) }()
	w := p.Open(t)
	want := map[string]bool{"agent:pm": false, "bugs:": false, "confirmations:": false}
	// Changes are made until each was seen: a watch that starts after the
	// first change would miss it, and that is no failure of the watch.
	for {
		if err := w.Agents().UpdateRuntime(ctx, "pm", func(rs *store.RuntimeState, _ bool) error {
			rs.Agent, rs.Message, rs.UpdatedAt = "pm", time.Now().String(), time.Now().UTC()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Bugs().Open(ctx, newBug(time.Now().String(), "t")); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Confirmations().Check(ctx, confirmCall(time.Now().String())); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-got:
			want[c.What+":"+c.Agent] = true
			for len(got) > 0 {
				c := <-got
				want[c.What+":"+c.Agent] = true
			}
		case <-wctx.Done():
			t.Fatalf("changes seen: %v", want)
		case <-time.After(500 * time.Millisecond):
		}
		if want["agent:pm"] && want["bugs:"] && want["confirmations:"] {
			return
		}
	}
}
