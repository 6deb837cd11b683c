package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// budgetCommands are built to exhaust the guard (issue 22: ~250 bytes that
// drove the server past 700 MiB, 20,000 nested groups that left the hook
// without a decision).
var budgetCommands = map[string]string{
	"doubling":             "a=xxxxxxxx; " + strings.Repeat("a=$a$a; ", 30) + "curl -d \"$a\" http://x",
	"nested groups":        strings.Repeat("{ ", 16000) + "true; " + strings.Repeat("} ", 16000),
	"nested substitutions": strings.Repeat("$( ", 10000) + "true " + strings.Repeat(")", 10000),
	"brace groups":         "echo " + strings.Repeat("{a,b}", 40),
}

// Generous bounds, so that a loaded shared machine never makes these
// flake: a refusal takes milliseconds and a toolhost process 15–25 MiB.
const (
	budgetWall   = time.Second
	budgetRSSMiB = 200
)

// runMeasured runs the binary and returns its output, exit code, wall
// time and peak RSS in MiB.
func runMeasured(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int, took time.Duration, rssMiB float64) {
	t.Helper()
	cmd := exec.Command(testutil.Toolhost(t), args...)
	start := time.Now()
	stdout, stderr, code = testutil.RunCommand(t, cmd, stdin)
	took = time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return stdout, stderr, code, took, float64(ru.Maxrss) / 1024
}

// TestGuardBudgetThroughBinary: toolhost guard and toolhost hook
// pretooluse refuse each budget case within a second, in bounded memory.
func TestGuardBudgetThroughBinary(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	for name, cmd := range budgetCommands {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, stderr, code, took, rss := runMeasured(t, cmd, "guard")
			if code != 2 || !strings.Contains(stderr, "Bash guard:") {
				t.Errorf("toolhost guard: exit %d, stderr %.300q; want exit 2 with the guard's reason", code, stderr)
			}
			checkBudget(t, "toolhost guard", took, rss)
			stdout, _, code, took, rss := runMeasured(t, testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": cmd}),
				"hook", "pretooluse", "--agent", "devloop-coder", "--project-dir", proj)
			if code != 0 || !strings.Contains(stdout, `"permissionDecision":"deny"`) || !strings.Contains(stdout, "Bash guard:") {
				t.Errorf("hook: exit %d, stdout %.300q; want a deny decision with the guard's reason", code, stdout)
			}
			checkBudget(t, "toolhost hook pretooluse", took, rss)
		})
	}
}

func checkBudget(t *testing.T, what string, took time.Duration, rss float64) {
	t.Helper()
	if took > budgetWall {
		t.Errorf("%s answered in %v, want under %v", what, took, budgetWall)
	}
	if rss > budgetRSSMiB {
		t.Errorf("%s peaked at %.1f MiB RSS, want under %d MiB", what, rss, budgetRSSMiB)
	}
	t.Logf("%s: refused in %v, peak RSS %.1f MiB", what, took.Round(time.Millisecond), rss)
}

// TestBashToolBudget sends the budget cases to the bash tool of a real
// server over stdio: each call is answered with the guard's refusal within
// a second, and the server's peak RSS stays bounded.
func TestBashToolBudget(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	if err := os.MkdirAll(proj+"/units/u", 0o755); err != nil {
		t.Fatal(err)
	}
	c := testutil.Serve(t, "--project-dir", proj, "--agent", "devloop-coder", "--session", "s-budget", "--unit", "u")
	for name, cmd := range budgetCommands {
		start := time.Now()
		r := testutil.CallTool(t, c, "bash", map[string]any{"command": cmd})
		took := time.Since(start)
		if !r.IsError || !strings.Contains(r.Text(), "Bash guard:") {
			t.Errorf("%s: result %v %.300s, want the guard's refusal", name, r.IsError, r.Text())
		}
		if took > budgetWall {
			t.Errorf("%s: answered in %v, want under %v", name, took, budgetWall)
		}
		t.Logf("%s: refused in %v", name, took.Round(time.Millisecond))
	}
	hwm := procStatusKB(t, c.Process().PID, "VmHWM")
	if mib := float64(hwm) / 1024; mib > budgetRSSMiB {
		t.Errorf("server peak RSS %.1f MiB, want under %d MiB", mib, budgetRSSMiB)
	} else {
		t.Logf("server peak RSS after the budget cases: %.1f MiB", mib)
	}
}

// procStatusKB reads a kB field of /proc/<pid>/status.
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
