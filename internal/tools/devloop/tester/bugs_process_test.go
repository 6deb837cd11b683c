package tester

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// startTesters launches n real toolhost processes serving the tester agent
// on one project dir, initialised and ready for tools/call.
//
// They serve the embedded policy with bug_open's deadline raised from 10 s to
// 2 min: these tests are about ids and whole files under a stampede (30
// callers on one project's bug lock, five times the design case), and on a
// loaded machine the last of 30 queued callers can wait past 10 s for the
// lock. The deadline is the policy's to set; a call's latency is measured by
// the benchmarks, not here.
func startTesters(t *testing.T, dir string, n int) []*stdioclient.Client {
	t.Helper()
	var pol map[string]json.RawMessage
	var tools map[string]map[string]any
	if err := json.Unmarshal(configs.ToolsJSON, &pol); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(pol["tools"], &tools); err != nil {
		t.Fatal(err)
	}
	tools["bug_open"]["timeout_ms"] = 120000
	var err error
	if pol["tools"], err = json.Marshal(tools); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(pol)
	if err != nil {
		t.Fatal(err)
	}
	policyFile := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(policyFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	clients := make([]*stdioclient.Client, n)
	for i := range clients {
		clients[i] = testutil.Serve(t, "--project-dir", dir, "--policy", policyFile, "--agent", "tester", "--unit", "todo-be", "--session", fmt.Sprintf("s%d", i))
	}
	return clients
}

func callOpen(ctx context.Context, cl *stdioclient.Client, title string) (BugOpenOutput, error) {
	var out BugOpenOutput
	r, err := cl.CallTool(ctx, "bug_open", map[string]any{
		"title": title, "severity": "major", "evidence": map[string]any{"test": "suite " + title},
	}, nil)
	if err != nil {
		return out, err
	}
	if r.IsError {
		return out, fmt.Errorf("bug_open %q: isError: %s", title, r.Text())
	}
	if err := json.Unmarshal(r.StructuredContent, &out); err != nil {
		return out, err
	}
	if !out.OK {
		return out, fmt.Errorf("bug_open %q: ok:false: %s", title, out.Reason)
	}
	return out, nil
}

// Six agents' processes open 50 bugs each at the same time: every bug gets
// its own id, ids are 1…300 with no gap, and every file is whole.
func TestBugOpenSixProcessesNeverCollide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const procs, each, workers = 6, 50, 5
	clients := startTesters(t, dir, procs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		mu  sync.Mutex
		ids = map[string]string{}
		wg  sync.WaitGroup
	)
	errs := make(chan error, procs*each)
	for p, cl := range clients {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < each; i += workers {
					title := fmt.Sprintf("process %d bug %d", p, i)
					out, err := callOpen(ctx, cl, title)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if prev, dup := ids[out.ID]; dup || out.Duplicate {
						errs <- fmt.Errorf("%s given to %q and %q (duplicate=%v)", out.ID, prev, title, out.Duplicate)
					}
					ids[out.ID] = title
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(ids) != procs*each {
		t.Fatalf("%d distinct ids, want %d", len(ids), procs*each)
	}
	all, bad, err := bugs.Scan(dir)
	if err != nil || len(bad) > 0 {
		t.Fatalf("a bug file is torn or unreadable: %v %+v", err, bad)
	}
	if len(all) != procs*each {
		t.Fatalf("%d bug files, want %d", len(all), procs*each)
	}
	for n := 1; n <= procs*each; n++ {
		id := bugs.FormatID(n)
		b, err := bugs.Load(dir, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if ids[id] != b.Title || b.Status != "open" || len(b.Evidence) != 1 {
			t.Errorf("%s holds %q (status %s, %d evidence), the call was told %q", id, b.Title, b.Status, len(b.Evidence), ids[id])
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "bugs", ".*tmp*"))
	if len(leftovers) > 0 {
		t.Errorf("temp files left behind: %v", leftovers)
	}
}

// Two processes report the same bug at the same instant: one bug, one
// duplicate:true, the other process's evidence appended.
func TestBugOpenSameBugFromTwoProcessesAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clients := startTesters(t, dir, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const rounds = 10
	for r := range rounds {
		title := fmt.Sprintf("login fails on round %d", r)
		var wg sync.WaitGroup
		start := make(chan struct{})
		outs := make([]BugOpenOutput, len(clients))
		errs := make([]error, len(clients))
		for i, cl := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				outs[i], errs[i] = callOpen(ctx, cl, title)
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if outs[0].ID != outs[1].ID || outs[0].Duplicate == outs[1].Duplicate {
			t.Fatalf("round %d: %+v and %+v, want one id and exactly one duplicate:true", r, outs[0], outs[1])
		}
	}
	all, bad, err := bugs.Scan(dir)
	if err != nil || len(bad) > 0 || len(all) != rounds {
		t.Fatalf("%d bugs (err %v, unreadable %+v), want %d", len(all), err, bad, rounds)
	}
}
