package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ProcessDir returns a new directory for files that live as long as this
// test process — a binary built once for every test of a package, say.
// A package-level build cannot use t.Cleanup (it outlives the test that
// made it) and a test process killed by its timeout runs no cleanup at
// all, so the directories are named by the process id, under one parent
// (os.TempDir()/toolhost-test), and each call first removes the ones whose
// process is gone. Without that sweep every `go test` run left a 60 MB
// binary behind.
func ProcessDir(prefix string) (string, error) {
	parent := filepath.Join(os.TempDir(), "toolhost-test")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	sweepDeadProcessDirs(parent)
	return os.MkdirTemp(parent, prefix+"-"+strconv.Itoa(os.Getpid())+"-")
}

// sweepDeadProcessDirs removes parent's entries named <prefix>-<pid>-<rand>
// whose process no longer exists.
func sweepDeadProcessDirs(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if len(parts) < 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[len(parts)-2])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		// Signal 0 checks existence; EPERM means a process of another
		// user holds the pid, which is alive too.
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}
