package live

import (
	"os"
	"os/exec"
	"testing"
)

// TestRunningFollowsTheHolder: a holder's lock is seen as running while
// its process holds it and not after; the stale file is then removed. The
// holder here is another process (a lock a process holds itself is its
// own to take again), which ends by being killed: the kernel releases
// the lock however a process ends.
func TestRunningFollowsTheHolder(t *testing.T) {
	if os.Getenv("LIVE_TEST_HOLDER") != "" {
		if _, err := Hold(os.Getenv("LIVE_TEST_HOLDER"), "devloop-coder"); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		select {}
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunningFollowsTheHolder$")
	cmd.Env = append(os.Environ(), "LIVE_TEST_HOLDER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("holder: %q %v", buf, err)
	}
	h, err := Running(dir)
	if err != nil || len(h) != 1 || h[0].Agent != "devloop-coder" || h[0].PID != cmd.Process.Pid {
		t.Fatalf("while held: %+v %v", h, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if h, err := Running(dir); err != nil || len(h) != 0 {
		t.Fatalf("after the holder died: %+v %v", h, err)
	}
	if ents, _ := os.ReadDir(dir + "/" + Dir); len(ents) != 0 {
		t.Fatalf("stale lock files left: %v", ents)
	}
}
