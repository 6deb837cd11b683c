package confirm_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/sandbox"
)

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func store(t *testing.T, dir string, c *clock) *confirm.Store {
	t.Helper()
	door, err := sandbox.New(dir, "toolhost", []string{".toolhost/**"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { door.Close() })
	return &confirm.Store{Door: door, Clock: c}
}

// TestApprovalConsumedOnceAcrossDoors races callers that each hold their own
// door (as separate processes do) for one approval: exactly one may run.
func TestApprovalConsumedOnceAcrossDoors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	call := confirm.Call{SessionID: "s", Agent: "pm", Tool: "t", CallID: "c0", Args: json.RawMessage(`{"a":1}`), Preview: json.RawMessage(`{"a":1}`)}
	res, err := store(t, dir, c).Check(call)
	if err != nil || res.Verdict != confirm.Ask {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := store(t, dir, c).Decide(res.Entry.ID, true); err != nil {
		t.Fatal(err)
	}
	const n = 8
	stores := make([]*confirm.Store, n)
	for i := range stores {
		stores[i] = store(t, dir, c)
	}
	var mu sync.Mutex
	runs := 0
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Check(call)
			if err != nil {
				t.Error(err)
				return
			}
			if r.Verdict == confirm.Run {
				mu.Lock()
				runs++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if runs != 1 {
		t.Fatalf("approval consumed %d times", runs)
	}
}

func TestDecideErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := store(t, dir, c)
	res, err := s.Check(confirm.Call{SessionID: "s", Tool: "t", Args: json.RawMessage(`{}`), TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide("cf-missing", true); !errors.Is(err, confirm.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	e, err := s.Decide(res.Entry.ID, false)
	if err != nil || e.Status != confirm.Denied || !e.ExpiresAt.Equal(c.t.Add(time.Minute)) {
		t.Fatalf("deny: %+v %v", e, err)
	}
	if _, err := s.Decide(res.Entry.ID, true); !errors.Is(err, confirm.ErrClosed) {
		t.Fatalf("second decision: %v", err)
	}
	// Another session with the same call does not see this decision.
	other, err := s.Check(confirm.Call{SessionID: "s2", Tool: "t", Args: json.RawMessage(`{}`), TTL: time.Minute})
	if err != nil || other.Verdict != confirm.Ask || other.Entry.ID == res.Entry.ID {
		t.Fatalf("other session: %+v %v", other, err)
	}
	// Closed entries are pruned a day later; the file stays small.
	c.t = c.t.Add(25 * time.Hour)
	if _, err := s.Check(confirm.Call{SessionID: "s3", Tool: "t", Args: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].SessionID != "s3" {
		t.Fatalf("after pruning: %d entries %v", len(list), err)
	}
}

// TestDecisionBoundToAgent: an approval made for one agent's call is never
// consumed by another agent's identical call, even one that presents the
// same session id (two agents launched with one --session): the second
// agent is refused outright, and the approval still waits for its agent.
func TestDecisionBoundToAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := store(t, dir, c)
	coder := confirm.Call{SessionID: "shared", Agent: "coder", Tool: "bash", CallID: "c1",
		Args: json.RawMessage(`{"command":"rm -rf build"}`), Preview: json.RawMessage(`{}`)}
	res, err := s.Check(coder)
	if err != nil || res.Verdict != confirm.Ask {
		t.Fatalf("coder's first call: %+v %v", res, err)
	}
	if _, err := s.Decide(res.Entry.ID, true); err != nil {
		t.Fatal(err)
	}
	tester := coder
	tester.Agent, tester.CallID = "tester", "t1"
	for name, try := range map[string]func(confirm.Call) (confirm.Result, error){"Check": s.Check, "Take": s.Take} {
		res, err := try(tester)
		var taken *confirm.SessionTakenError
		if !errors.As(err, &taken) || taken.Agent != "coder" || taken.Want != "tester" {
			t.Fatalf("tester's identical call through %s: %+v %v, want SessionTakenError naming coder", name, res, err)
		}
	}
	if err := s.Claim("shared", "tester"); err == nil {
		t.Fatal("tester claimed the coder's session")
	}
	if err := s.Claim("shared", "coder"); err != nil {
		t.Fatalf("the coder's own claim: %v", err)
	}
	res, err = s.Check(coder)
	if err != nil || res.Verdict != confirm.Run {
		t.Fatalf("coder's retry after the tester's attempts: %+v %v, want Run", res, err)
	}
}

// TestSessionClaimOutlivesQuietDays: a session id stays its agent's while a
// decision of it may still wait, even once the claim itself was pruned.
func TestSessionClaimOutlivesQuietDays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := store(t, dir, c)
	if err := s.Claim("s", "pm"); err != nil {
		t.Fatal(err)
	}
	long := confirm.Call{SessionID: "s", Agent: "pm", Tool: "t", Args: json.RawMessage(`{}`), TTL: 60 * 24 * time.Hour}
	if _, err := s.Check(long); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(45 * 24 * time.Hour)
	if err := s.Claim("s", "coder"); err == nil {
		t.Fatal("a pending confirmation's session went to another agent once its claim aged out")
	}
	c.t = c.t.Add(30 * 24 * time.Hour)
	if err := s.Claim("s", "coder"); err != nil {
		t.Fatalf("an id unused for 75 days with nothing open: %v", err)
	}
}
