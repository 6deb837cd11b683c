package confirm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/store/filestore"
)

func states(t *testing.T, dir string, c *clock) *confirm.States {
	t.Helper()
	st, err := filestore.Open(dir, filestore.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &confirm.States{Store: st.RequestStates(), Clock: c}
}

// TestRequestStates: a state redeems once, for exactly the call it was
// issued for, within its lifetime, in the project whose key signed it.
func TestRequestStates(t *testing.T) {
	t.Parallel()
	b := confirm.Binding{Tool: "write", ArgsHash: "h1", Agent: "pm", Project: "p\x00/proj"}
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	s := states(t, dir, c)
	issue := func() string {
		st, err := s.Issue(context.Background(), b, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	other := func(f func(*confirm.Binding)) confirm.Binding { x := b; f(&x); return x }
	alter := func(st string, i int) string {
		r := byte('A')
		if st[i] == 'A' {
			r = 'B'
		}
		return st[:i] + string(r) + st[i+1:]
	}
	cases := []struct {
		name   string
		state  func() string
		redeem confirm.Binding
		want   error
	}{
		{"the call it was issued for", issue, b, nil},
		{"another tool", issue, other(func(x *confirm.Binding) { x.Tool = "other" }), confirm.ErrStateMismatch},
		{"other arguments", issue, other(func(x *confirm.Binding) { x.ArgsHash = "h2" }), confirm.ErrStateMismatch},
		{"another agent", issue, other(func(x *confirm.Binding) { x.Agent = "coder" }), confirm.ErrStateMismatch},
		{"another project", issue, other(func(x *confirm.Binding) { x.Project = "q\x00/else" }), confirm.ErrStateMismatch},
		{"payload altered", func() string { st := issue(); return alter(st, 3) }, b, confirm.ErrStateInvalid},
		{"signature altered", func() string { st := issue(); return alter(st, len(st)-5) }, b, confirm.ErrStateInvalid},
		// The last character of the signature carries padding bits: a
		// lenient decoder would read both spellings as one state.
		{"non-canonical encoding", func() string { st := issue(); return alter(st, len(st)-1) }, b, confirm.ErrStateInvalid},
		{"garbage", func() string { return "not-a-state" }, b, confirm.ErrStateInvalid},
		{"expired", func() string { st := issue(); c.t = c.t.Add(2 * time.Minute); return st }, b, confirm.ErrStateExpired},
	}
	for _, tc := range cases {
		st := tc.state()
		if err := s.Redeem(context.Background(), st, tc.redeem); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: Redeem = %v, want %v", tc.name, err, tc.want)
		}
	}
	st := issue()
	if err := s.Redeem(context.Background(), st, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Redeem(context.Background(), st, b); !errors.Is(err, confirm.ErrStateReplayed) {
		t.Errorf("second redeem = %v, want ErrStateReplayed", err)
	}
	// Another project's key does not verify this project's states.
	if err := states(t, t.TempDir(), c).Redeem(context.Background(), issue(), b); !errors.Is(err, confirm.ErrStateInvalid) {
		t.Errorf("redeem in another project = %v, want ErrStateInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(dir, filestore.KeyPath)); err != nil {
		t.Errorf("the project key is not stored in %s: %v", filestore.KeyPath, err)
	}
}

// TestRequestStateRedeemedOnceAcrossProcesses: callers each holding their
// own door (separate toolhost processes of one project) race to redeem one
// state; exactly one succeeds, and they all share one key.
func TestRequestStateRedeemedOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := confirm.Binding{Tool: "write", ArgsHash: "h", Agent: "pm", Project: "p"}
	st, err := states(t, dir, c).Issue(context.Background(), b, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var ok, replayed atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch err := states(t, dir, c).Redeem(context.Background(), st, b); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, confirm.ErrStateReplayed):
				replayed.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || replayed.Load() != 7 {
		t.Fatalf("redeemed %d times, refused as replayed %d times; want 1 and 7", ok.Load(), replayed.Load())
	}
}
