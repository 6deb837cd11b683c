package testutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/toolhost/toolhost/internal/confine"
)

// Each test process registers the toolhost servers its tests start (a
// dashboard, serve --http) in a directory of its own: their ports are kept
// from that process's confined commands, not from those of every other test
// run on the machine. The directories of test processes that are gone are
// removed.
func init() {
	if os.Getenv(confine.EnvServersDir) != "" {
		return
	}
	const prefix = "toolhost-test-servers-"
	if entries, err := os.ReadDir(os.TempDir()); err == nil {
		for _, e := range entries {
			pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix))
			if !strings.HasPrefix(e.Name(), prefix) || err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				continue
			}
			_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
		}
	}
	_ = os.Setenv(confine.EnvServersDir, filepath.Join(os.TempDir(), fmt.Sprintf("%s%d", prefix, os.Getpid())))
}
