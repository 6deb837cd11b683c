package safety

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

// newCtx builds the Ctx of a coder call on a fresh project with cwd as the
// agent's working directory (project-relative). The allow-list is spelled
// out because the sandbox_check cases quote it.
func newCtx(t *testing.T, cwd string) (*callctx.Ctx, string) {
	t.Helper()
	c := testutil.NewCtx(t, testutil.CtxOptions{Agent: "coder", AllowList: []string{"units/**", "agent-state/coder-*.json"}, Cwd: filepath.Join(".", cwd)})
	return c, c.ProjectDir
}

func call[Out any](t *testing.T, ctx context.Context, tl tool.Tool, c *callctx.Ctx, args string) (Out, tool.Result, error) {
	t.Helper()
	var out Out
	r, err := tl.Call(ctx, c, json.RawMessage(args))
	if err != nil {
		return out, r, err
	}
	if err := json.Unmarshal(r.Structured, &out); err != nil {
		t.Fatalf("decode %s: %v", r.Structured, err)
	}
	return out, r, nil
}

func TestBash(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		cwd      string
		args     map[string]any
		ok       bool
		exit     int
		stdout   string // substring
		stderr   string // substring
		reason   string // substring
		timedOut bool
	}{
		{name: "success in cwd", cwd: "units/a", args: map[string]any{"command": "pwd; echo out; echo err >&2"}, ok: true, stdout: "units/a\nout\n", stderr: "err\n"},
		{name: "non-zero exit", args: map[string]any{"command": "echo boom >&2; exit 3"}, exit: 3, stderr: "boom", reason: "exit status 3"},
		{name: "stdin is closed", args: map[string]any{"command": "cat; echo done"}, ok: true, stdout: "done"},
		{name: "timeout", args: map[string]any{"command": "echo started; sleep 30", "timeout_ms": 300}, exit: -1, stdout: "started", reason: "timed out after 300 ms", timedOut: true},
		// A unit's directory before its first file: in the allow-list, so
		// the first command creates it and runs there.
		{name: "missing cwd in the allow-list", cwd: "units/missing", args: map[string]any{"command": "pwd"}, ok: true, stdout: "units/missing\n"},
		{name: "missing cwd outside the allow-list", cwd: "prd/missing", args: map[string]any{"command": "true"}, reason: "prd/missing does not exist and is outside this agent's allow-list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, dir := newCtx(t, tc.cwd)
			if tc.cwd != "" && !strings.Contains(tc.cwd, "missing") {
				if err := os.MkdirAll(filepath.Join(dir, tc.cwd), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			args, _ := json.Marshal(tc.args)
			start := time.Now()
			out, r, err := call[BashOutput](t, context.Background(), Bash(), c, string(args))
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if out.OK != tc.ok || r.Failed == tc.ok {
				t.Fatalf("ok = %v (failed %v), want %v: %+v", out.OK, r.Failed, tc.ok, out)
			}
			if tc.reason == "" && out.ExitCode != tc.exit {
				t.Errorf("exit_code = %d, want %d", out.ExitCode, tc.exit)
			}
			if !strings.Contains(out.Stdout, tc.stdout) || !strings.Contains(out.Stderr, tc.stderr) || !strings.Contains(out.Reason, tc.reason) {
				t.Errorf("got %+v; want stdout ~%q stderr ~%q reason ~%q", out, tc.stdout, tc.stderr, tc.reason)
			}
			if out.TimedOut != tc.timedOut {
				t.Errorf("timed_out = %v, want %v", out.TimedOut, tc.timedOut)
			}
			if tc.timedOut && time.Since(start) > 10*time.Second {
				t.Errorf("the timed-out call took %v", time.Since(start))
			}
		})
	}
}

// alive reports whether pid still runs (a zombie counts as gone).
func alive(pid int) bool {
	st, err := procs.ReadStat(pid)
	return err == nil && !st.Dead()
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs: the process group was not killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBashKillsGroup proves that children never outlive the call: on
// timeout, on cancel and after a normal exit that left a background job.
// The command publishes the job's pid by renaming a complete file into
// place, so the test never reads a half-written pid.
func TestBashKillsGroup(t *testing.T) {
	t.Parallel()
	const publish = "sleep 60 & echo $! > child.tmp && mv child.tmp child.pid"
	cases := []struct {
		name    string
		command string
		timeout int
		cancel  bool
	}{
		{name: "timeout", command: publish + "; wait", timeout: 500},
		{name: "cancel", command: publish + "; wait", cancel: true},
		{name: "background job after exit", command: publish},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, proj := newCtx(t, "units/a")
			dir := filepath.Join(proj, "units/a")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				go func() {
					for {
						// The redirect creates the file before echo writes
						// the pid: cancel only once the whole line is there.
						if b, err := os.ReadFile(filepath.Join(dir, "child.pid")); err == nil && strings.HasSuffix(string(b), "\n") {
							cancel()
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
			}
			args, _ := json.Marshal(map[string]any{"command": tc.command, "timeout_ms": max(tc.timeout, 30000)})
			if tc.timeout > 0 {
				args, _ = json.Marshal(map[string]any{"command": tc.command, "timeout_ms": tc.timeout})
			}
			start := time.Now()
			_, _, err := call[BashOutput](t, ctx, Bash(), c, string(args))
			if tc.cancel && err == nil {
				t.Fatal("a cancelled call returned no error")
			}
			if !tc.cancel && err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("call took %v", d)
			}
			b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			waitGone(t, pid)
		})
	}
}

func TestBashOutputCap(t *testing.T) {
	t.Parallel()
	c, _ := newCtx(t, "")
	out, _, err := call[BashOutput](t, context.Background(), Bash(), c, `{"command":"printf 'HEAD'; head -c 300000 /dev/zero | tr '\\0' x; printf 'TAIL'"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK || !out.Truncated {
		t.Fatalf("ok=%v truncated=%v, want both", out.OK, out.Truncated)
	}
	if len(out.Stdout) > OutputCap+100 || !strings.HasPrefix(out.Stdout, "HEAD") || !strings.HasSuffix(out.Stdout, "TAIL") ||
		!strings.Contains(out.Stdout, "bytes omitted") {
		t.Errorf("stdout of %d bytes: want head, tail and the omitted marker within the cap", len(out.Stdout))
	}
}

func TestCapped(t *testing.T) {
	t.Parallel()
	var w capped
	for i := range 10000 {
		_, _ = w.Write([]byte(strconv.Itoa(i%10) + "23456789\n"))
	}
	s := w.String()
	if !strings.HasPrefix(s, "023456789\n") || !strings.HasSuffix(s, "923456789\n") || w.dropped != 100000-OutputCap {
		t.Errorf("dropped %d; head/tail wrong: %q … %q", w.dropped, s[:20], s[len(s)-20:])
	}
}

func TestSandboxCheck(t *testing.T) {
	t.Parallel()
	c, dir := newCtx(t, "")
	if err := os.MkdirAll(filepath.Join(dir, "units/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../memory", filepath.Join(dir, "units/a/m")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, op string
		allowed  bool
		reason   string
	}{
		{"units/a/src/index.ts", "write", true, ""},
		{"units/a/src/index.ts", "", true, ""},
		{"agent-state/coder-todo.json", "write", true, ""},
		{"units", "write", false, "allowed directory itself"},
		{"prd/index.html", "write", false, "Sandbox violation: devloop-coder tried to write prd/index.html (allowed: units/**, agent-state/coder-*.json)"},
		{"units/a/m/x.md", "write", false, "units/a/m is a symlink"},
		{"/etc/passwd", "write", false, "absolute paths"},
		{"units/../../x", "write", false, "leaves the project"},
		{"prd/index.html", "read", true, ""},
		{"out/secret", "read", false, "tried to read"},
		{"../x", "read", false, "tried to read"},
	}
	for _, tc := range cases {
		args, _ := json.Marshal(map[string]string{"path": tc.path, "op": tc.op})
		out, r, err := call[SandboxCheckOutput](t, context.Background(), SandboxCheck(), c, string(args))
		if err != nil || !out.OK || r.Failed {
			t.Fatalf("sandbox_check %s: ok=%v err=%v", args, out.OK, err)
		}
		if out.Allowed != tc.allowed || !strings.Contains(out.Reason, tc.reason) {
			t.Errorf("sandbox_check %s = %+v, want allowed=%v reason ~%q", args, out, tc.allowed, tc.reason)
		}
		if tc.allowed && !strings.HasPrefix(out.Resolved, dir) {
			t.Errorf("resolved %q is not inside %s", out.Resolved, dir)
		}
		// The verdict is the one the real write gets.
		if tc.op != "read" {
			werr := c.Files.WriteFile(tc.path, []byte("x"))
			if (werr == nil) != tc.allowed {
				t.Errorf("sandbox_check said allowed=%v for %s but the write returned %v", tc.allowed, tc.path, werr)
			}
		}
	}
}
