package upstream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestServeReplacesWedgedUpstream drives the built binary with a real
// upstream that goes wrong in each way a server can: it hangs (every
// request unanswered), hangs while idle (only the health probe notices),
// closes its stdout and stays alive, or crashes mid-call. In every mode the
// wedged process ignores SIGTERM. After max_failures (2) failures in a row
// toolhost kills its whole process group (no process of it left, checked by
// pid and start time), withholds its tools (list_changed), starts it again
// with backoff and serves its tools once it answers (list_changed); the
// built-in tools answer throughout, and a write tool is never called twice.
func TestServeReplacesWedgedUpstream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ping int // ping_interval_ms
		// fail makes the upstream fail twice in a row; each call must end
		// in isError naming want.
		fail func(t *testing.T, c *stdioclient.Client)
	}{
		{"hang", 60000, func(t *testing.T, c *stdioclient.Client) {
			mustFail(t, c, "fake__wedge", map[string]any{"mode": "hang"}, "timed out")
			builtinAnswers(t, c)
			mustFail(t, c, "fake__echo", map[string]any{"text": "anyone?"}, "timed out")
		}},
		{"hang while idle", 300, func(t *testing.T, c *stdioclient.Client) {
			if r := testutil.CallTool(t, c, "fake__wedge", map[string]any{"mode": "hang_later"}); r.IsError {
				t.Fatalf("hang_later answers its own call: %+v", r)
			}
			// Nothing more is sent: only the ping probe can notice.
		}},
		{"close stdout, stay alive", 60000, func(t *testing.T, c *stdioclient.Client) {
			mustFail(t, c, "fake__wedge", map[string]any{"mode": "close_stdout"}, "connection was lost")
			builtinAnswers(t, c)
			mustFail(t, c, "fake__wedge", map[string]any{"mode": "close_stdout"}, "connection was lost")
		}},
		{"crash mid-call", 60000, func(t *testing.T, c *stdioclient.Client) {
			mustFail(t, c, "fake__crash", map[string]any{}, "connection was lost")
			builtinAnswers(t, c)
			mustFail(t, c, "fake__crash", map[string]any{}, "connection was lost")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			calls := fakeFile(t, dir, "calls")
			rules := map[string]policy.Rule{
				"fake__wedge": {Permission: policy.Write, TimeoutMS: 1500}, "fake__crash": {Permission: policy.Write},
				"fake__echo": {Permission: policy.Read, TimeoutMS: 1500}, "fake__pid": {Permission: policy.Read},
				"fake__spawn_child": {Permission: policy.Write},
			}
			agentsFile, policyFile := writeConfigs(t, dir, rules, policy.Upstream{Name: "fake", Transport: "stdio", Command: fakeMCP(t),
				DiscoveryTimeoutMS: 10000, MaxFailures: 2, PingIntervalMS: tc.ping, Env: map[string]string{"FAKEMCP_CALLS_FILE": calls}, Sandbox: fakeWrites(dir)})
			c := startServe(t, filepath.Join(dir, "project"), agentsFile, policyFile)
			listNames(t, c)
			// A process the upstream started in its group must die with it.
			var child struct{ PID int }
			testutil.DecodeResult(t, "fake__spawn_child", testutil.CallTool(t, c, "fake__spawn_child", map[string]any{}), &child)
			st, err := procs.ReadStat(child.PID)
			if err != nil {
				t.Fatal(err)
			}
			drainNotifications(c)

			tc.fail(t, c)
			waitListChanged(t, c, 30*time.Second) // withheld while it restarts
			builtinAnswers(t, c)
			waitListed(t, c, "fake__echo") // back
			if r := testutil.CallTool(t, c, "fake__echo", map[string]any{"text": "back"}); r.IsError || r.Text() != "echo: back" {
				t.Fatalf("fake__echo after the restart: %+v\n%s", r, c.Stderr())
			}

			seen := callsOf(t, calls)
			last := seen[len(seen)-1]
			old := append([]served{{tool: "spawned sleep", pid: child.PID, ticks: st.StartTicks}}, seen[:len(seen)-1]...)
			for _, p := range old {
				if p.pid == last.pid && p.ticks == last.ticks {
					t.Fatalf("%s was served by the process that serves after the restart (pid %d): it was not replaced", p.tool, p.pid)
				}
				if procs.Alive(p.pid, p.ticks) {
					t.Errorf("pid %d (served %s) is still alive after the restart: an orphan", p.pid, p.tool)
				}
			}
			if n := count(seen, "wedge") + count(seen, "crash"); n > 2 {
				t.Errorf("the write tools reached the upstream %d times for 2 calls: a write was retried", n)
			}
			for _, ev := range []string{`"event":"upstream_unhealthy"`, `"event":"upstream_restarting"`} {
				if !strings.Contains(c.Stderr(), ev) {
					t.Errorf("log misses %s", ev)
				}
			}
		})
	}
}

func mustFail(t *testing.T, c *stdioclient.Client, name string, args any, want string) {
	t.Helper()
	r := testutil.CallTool(t, c, name, args)
	if !r.IsError || !strings.Contains(r.Text(), want) {
		t.Fatalf("%s: %+v; want isError naming %q\n%s", name, r, want, c.Stderr())
	}
}

// builtinAnswers checks that a built-in tool works whatever the upstream
// does.
func builtinAnswers(t *testing.T, c *stdioclient.Client) {
	t.Helper()
	r := testutil.CallTool(t, c, "timeline_append", map[string]any{"kind": "test.upstream", "message": "still here"})
	var out struct{ Seq int }
	if r.IsError || json.Unmarshal(r.StructuredContent, &out) != nil || out.Seq == 0 {
		t.Fatalf("timeline_append while the upstream misbehaves: %+v", r)
	}
}

// TestServeExitBoundedByGrace: a wedged upstream (it ignores the end of its
// stdin and SIGTERM) cannot hold toolhost's exit past --grace, counted from
// the end of input: idle, it is killed within the grace; with a call still
// running into it, the call gets the grace and the upstream is killed at
// once after it. Its process is gone when toolhost has exited.
func TestServeExitBoundedByGrace(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	for _, inFlight := range []bool{false, true} {
		t.Run(map[bool]string{false: "idle", true: "call in flight"}[inFlight], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			calls := fakeFile(t, dir, "calls")
			rules := map[string]policy.Rule{"fake__wedge": {Permission: policy.Write, TimeoutMS: 500}, "fake__slow": {Permission: policy.Read, TimeoutMS: 60000}}
			agentsFile, policyFile := writeConfigs(t, dir, rules, policy.Upstream{Name: "fake", Transport: "stdio", Command: fakeMCP(t),
				DiscoveryTimeoutMS: 10000, PingIntervalMS: 60000, Env: map[string]string{"FAKEMCP_CALLS_FILE": calls}, Sandbox: fakeWrites(dir)})
			c := testutil.ServeEnv(t, os.Environ(), "--agent", "pm", "--project-dir", filepath.Join(dir, "project"),
				"--agents", agentsFile, "--policy", policyFile, "--grace", grace.String())
			listNames(t, c)
			mustFail(t, c, "fake__wedge", map[string]any{"mode": "hang"}, "timed out")
			if inFlight {
				// Sent before the end of input, so toolhost runs it (into the
				// wedged server) when shutdown begins.
				if _, _, err := c.Dispatch("tools/call", map[string]any{"name": "fake__slow", "arguments": map[string]any{"ms": 60000}}); err != nil {
					t.Fatal(err)
				}
			}
			wedged := callsOf(t, calls)[0]
			start := time.Now()
			if err := c.Close(20 * time.Second); err != nil {
				t.Fatalf("exit: %v\n%s", err, c.Stderr())
			}
			// The bound: the grace, plus what a call cancelled at its end may
			// take to answer (1 s at most) and a margin for a loaded machine.
			took := time.Since(start)
			if took > grace+1500*time.Millisecond {
				t.Errorf("toolhost took %v to exit with --grace %v and a wedged upstream", took, grace)
			}
			t.Logf("exit took %v", took)
			if procs.Alive(wedged.pid, wedged.ticks) {
				t.Errorf("the wedged upstream (pid %d) outlived toolhost", wedged.pid)
			}
		})
	}
}
