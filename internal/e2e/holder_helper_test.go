package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestBashHolderIsTheHelper: the holder in front of a bash-tool command of
// a real serve is a process of the small helper installed beside toolhost
// (what the kernel says it executes, read while the command runs), not a
// second start of the whole toolhost — and it still holds the command:
// registered while it runs, gone with it.
func TestBashHolderIsTheHelper(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, "units/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(release, 0o644); err != nil {
		t.Fatal(err)
	}
	c := testutil.Serve(t, "--agent", "devloop-coder", "--project-dir", project)
	type answer struct {
		r   *stdioclient.ToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := c.CallTool(context.Background(), "bash", map[string]any{"command": "read -r line < " + release + "; echo released"}, nil)
		done <- answer{r, err}
	}()

	var holder []live.Entry
	for deadline := time.Now().Add(20 * time.Second); len(holder) == 0 || holder[0].PID == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command was never registered as running with its holder: %+v", holder)
		}
		var err error
		if holder, err = live.Running(project); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(holder[0].PID) + "/exe")
	want := testutil.ConfineHelper(t)
	if err != nil || exe != want {
		t.Errorf("the holder %d executes %q (%v), want the helper %s", holder[0].PID, exe, err, want)
	}
	f, err := os.OpenFile(release, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("go\n")
	f.Close()
	a := <-done
	if a.err != nil || a.r.IsError {
		t.Fatalf("bash: %v %+v", a.err, a.r)
	}
	var r bashResult
	testutil.DecodeResult(t, "bash", a.r, &r)
	if r.ExitCode != 0 || r.Stdout != "released\n" {
		t.Fatalf("the held command: %+v", r)
	}
	if h, err := live.Running(project); err != nil || len(h) != 0 {
		t.Fatalf("after the call: still registered %+v %v", h, err)
	}
}
