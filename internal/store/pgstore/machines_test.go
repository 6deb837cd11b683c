package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// TestTwoMachines: two checkouts of one project in different dirs
// ("machines"), six `toolhost serve` processes each, one database. Under
// load nothing is lost or doubled and the timeline's seq is strictly
// increasing; the audit trail is one chain that `toolhost audit verify`
// checks from either checkout; a bug opened on A is a duplicate on B; an
// approval given on A lets B's identical call run, once.
func TestTwoMachines(t *testing.T) {
	t.Parallel()
	_, url := pgtest.Shared(t)
	const pid = "two-machines"
	policy := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(policy, []byte(`{"tools":{"record_memory":{"permission":"write","confirm":true}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TOOLHOST_STORE="+url, "TOOLHOST_PID="+pid)
	agents := []string{"pm", "architect", "coder", "tester", "integrator", "bug-triager"}
	machines := map[string]string{"A": t.TempDir(), "B": t.TempDir()}
	type server struct {
		name string
		call func(name string, args any) (string, bool)
	}
	var servers []server
	for _, m := range []string{"A", "B"} {
		for i, ag := range agents {
			name := fmt.Sprintf("%s%d", m, i)
			c := testutil.ServeEnv(t, env, "--project-dir", machines[m], "--agent", ag, "--session", "sess-"+name, "--policy", policy)
			servers = append(servers, server{name: name, call: func(tool string, args any) (string, bool) {
				r := testutil.CallTool(t, c, tool, args)
				return r.Text(), r.IsError
			}})
		}
	}
	const perServer = 15
	seqs := make([][]int64, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perServer {
				text, isErr := s.call("timeline_append", map[string]any{"kind": "load", "message": fmt.Sprintf("%s %d", s.name, j)})
				if isErr {
					t.Errorf("%s: %s", s.name, text)
					return
				}
				var out struct{ Seq int64 }
				_ = json.Unmarshal([]byte(text), &out)
				seqs[i] = append(seqs[i], out.Seq)
			}
		}()
	}
	wg.Wait()
	db, err := pgstore.Open(context.Background(), url, pgstore.Options{ProjectID: pid})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var msgs []string
	var last int64
	if _, err := db.Timeline().Each(context.Background(), func(e store.TimelineEntry) error {
		if e.Seq <= last {
			return fmt.Errorf("seq %d after %d", e.Seq, last)
		}
		last = e.Seq
		msgs = append(msgs, e.Message)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(msgs)
	if len(msgs) != len(servers)*perServer || len(slices.Compact(slices.Clone(msgs))) != len(msgs) {
		t.Fatalf("%d entries (%d distinct), want %d each once", len(msgs), len(slices.Compact(slices.Clone(msgs))), len(servers)*perServer)
	}
	for i, s := range seqs {
		if !slices.IsSorted(s) || len(s) != perServer {
			t.Fatalf("server %s got seqs %v", servers[i].name, s)
		}
	}

	// A bug opened on A is the same bug on B.
	bug := map[string]any{"title": "Login returns 500", "unit_id": "api", "severity": "major", "evidence": map[string]any{"test": "auth > login", "log": "boom"}}
	a, _ := servers[3].call("bug_open", bug)
	bug["evidence"] = map[string]any{"test": "auth > login", "log": "boom again"}
	b, _ := servers[9].call("bug_open", bug)
	var ra, rb struct {
		ID        string `json:"id"`
		Duplicate bool   `json:"duplicate"`
	}
	_ = json.Unmarshal([]byte(a), &ra)
	_ = json.Unmarshal([]byte(b), &rb)
	if ra.ID == "" || ra.Duplicate || rb.ID != ra.ID || !rb.Duplicate {
		t.Fatalf("bug on A %s, on B %s: want one bug, B's a duplicate", a, b)
	}

	// B's call waits for a human; A approves it; B's identical call runs once.
	mem := map[string]any{"key": "shared", "content": "hello"}
	text, isErr := servers[6].call("record_memory", mem)
	id := regexp.MustCompile(`cf-[0-9A-Za-z]+`).FindString(text)
	if !isErr || id == "" {
		t.Fatalf("B's first call = %s, want needs_confirmation with an id", text)
	}
	out, err := exec.Command(testutil.Toolhost(t), "approve", id, "--project-dir", machines["A"], "--store", url, "--pid", pid).CombinedOutput()
	if err != nil {
		t.Fatalf("approve on A: %v\n%s", err, out)
	}
	if text, isErr := servers[6].call("record_memory", mem); isErr {
		t.Fatalf("B's call after A's approval: %s", text)
	}
	if text, isErr := servers[6].call("record_memory", mem); !isErr || !strings.Contains(text, "needs_confirmation") {
		t.Fatalf("the approval was used twice: %s", text)
	}

	// One chain, verified from either checkout.
	for m, dir := range machines {
		out, err := exec.Command(testutil.Toolhost(t), "audit", "verify", "--project-dir", dir, "--store", url, "--pid", pid, "--json").CombinedOutput()
		var v struct {
			Rows    int64
			Problem any
		}
		if err != nil || json.Unmarshal(out, &v) != nil || v.Problem != nil || v.Rows < int64(len(servers)*perServer) {
			t.Fatalf("audit verify on %s: %v\n%s", m, err, out)
		}
	}
	// Nothing of the shared state was written into either checkout.
	for m, dir := range machines {
		for _, p := range []string{"timeline.ndjson", ".toolhost/audit.ndjson", "bugs", "agent-state"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				t.Errorf("machine %s has %s: the shared state went to its files", m, p)
			}
		}
	}
}
