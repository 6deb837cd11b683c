package claudecli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil/claudecli"
)

// TestRunBash drives the real CLI through one scripted Bash call and checks
// both sides: the command ran (its file is on disk) and the model received
// its output as the tool_result; the run made no side request and called
// no endpoint the model does not serve.
func TestRunBash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := claudecli.NewModel(t, claudecli.Turn{
		Text:     "writing the file",
		ToolUses: []claudecli.ToolUse{{ID: "toolu_echo", Name: "Bash", Input: map[string]any{"command": "echo héllo | tee out.txt", "description": "write out.txt"}}},
	})
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: dir, PermissionMode: "bypassPermissions"})
	if res.ExitCode != 0 {
		t.Fatalf("claude failed: %s", res)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	if err != nil || string(b) != "héllo\n" {
		t.Fatalf("out.txt = %q, %v", b, err)
	}
	tr := m.ToolResult(t, "toolu_echo")
	if tr.ToolName != "Bash" || tr.IsError || !strings.Contains(tr.Text, "héllo") {
		t.Errorf("tool_result = %+v", tr)
	}
	if got := res.Final()["result"]; got != claudecli.DoneText {
		t.Errorf("final result = %v, want %q", got, claudecli.DoneText)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("%d main-conversation requests, want 2 (the tool use, then its result)", n)
	}
	if u := m.Unknown(); len(u) != 0 {
		t.Errorf("the CLI called endpoints the model does not serve: %v", u)
	}
}

// fatalTB records the first Fatal instead of failing the test, so a test
// can check that Run fails as it should.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestRunTimeoutKillsGroup: a CLI stuck waiting for the model is killed at
// the timeout with everything it started (here a background tail -f from its
// Bash), and Run fails naming the timeout.
func TestRunTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	// Skip (or fail under CI) here, on the test's goroutine: Run below gets
	// a fatalTB on another goroutine, where a skip cannot stop the test.
	claudecli.Binary(t)
	dir := t.TempDir()
	stuck := make(chan struct{})
	defer close(stuck)
	m := claudecli.NewScriptedModel(t, func(r claudecli.Request) claudecli.Turn {
		if r.Turn == 0 {
			return claudecli.Turn{ToolUses: []claudecli.ToolUse{{Name: "Bash", Input: map[string]any{"command": "tail -f /dev/null & echo $! > bg.pid"}}}}
		}
		<-stuck
		return claudecli.Turn{}
	})
	ft := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The whole timeout passes (the model never answers again); it must
		// leave a loaded machine time to start the CLI and run the Bash call.
		claudecli.Run(ft, m, claudecli.RunOptions{Dir: dir, PermissionMode: "bypassPermissions", Timeout: 15 * time.Second})
	}()
	<-done
	if !strings.Contains(ft.msg, "did not finish within 15s") {
		t.Fatalf("Run did not fail on the timeout: %q", ft.msg)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bg.pid"))
	if err != nil {
		t.Fatalf("the Bash call never ran: %v\n%s\n%+v", err, ft.msg, m.ToolResults())
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// SIGKILL is delivered asynchronously: give the kernel a moment.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background tail -f %d outlived the timeout: %s", pid, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
