package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestProcessDirSweepsDeadProcesses(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	// A process that has exited: its pid names a directory left behind.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(os.TempDir(), "toolhost-test")
	stale := filepath.Join(parent, "toolhost-bin-"+strconv.Itoa(dead.Process.Pid)+"-123")
	alive := filepath.Join(parent, "toolhost-bin-1-456") // pid 1 is always alive
	for _, d := range []string{stale, alive} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := ProcessDir("toolhost-bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("new dir: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead process's dir is still there (err %v)", err)
	}
	if _, err := os.Stat(alive); err != nil {
		t.Errorf("a live process's dir was removed: %v", err)
	}
}
