package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/internal/procs"
)

// TempDirPrefix names the private temp dirs in the system temp dir; the
// owner's pid and start ticks follow, so a dir whose owner is gone can be
// told from one in use.
const TempDirPrefix = "toolhost-cmd-"

const tempPrefix = TempDirPrefix

// NewTempDir creates a private temp dir (mode 0700, a new name under the
// system temp dir) for one command of the process pid that started at
// ticks. The caller removes it when the command is done; RemoveStaleTempDirs
// removes those whose owner died first.
func NewTempDir(pid int, ticks uint64) (string, error) {
	return os.MkdirTemp("", tempName(pid, ticks, ""))
}

// tempName is the pattern of an entry of the owner pid that started at
// ticks, as RemoveStaleTempDirs reads it back: prefix, pid, ticks, then
// what (if any) and the random part.
func tempName(pid int, ticks uint64, what string) string {
	return fmt.Sprintf("%s%d-%d-%s", tempPrefix, pid, ticks, what)
}

// NewReportFile creates an empty file (mode 0600, a new name under the
// system temp dir, named as NewTempDir's dirs are) for a command of the
// process pid that started at ticks to report into (the hook's directory
// report). The caller removes it; RemoveStaleTempDirs removes one whose
// owner died first.
func NewReportFile(pid int, ticks uint64) (string, error) {
	f, err := os.CreateTemp("", tempName(pid, ticks, "report-"))
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// RemoveStaleTempDirs removes the private temp dirs and report files whose
// owning process is gone (a toolhost killed during a command, an exec'ed
// `toolhost confine` whose command ended, a confine killed before it took
// its command's report).
func RemoveStaleTempDirs() {
	dir := os.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tempPrefix)
		if !ok || !(e.IsDir() || e.Type().IsRegular()) {
			continue
		}
		f := strings.SplitN(rest, "-", 3)
		if len(f) != 3 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		ticks, err2 := strconv.ParseUint(f[1], 10, 64)
		// Owner 0 is a detached unit's: removed by whoever stops the unit.
		if err1 != nil || err2 != nil || pid == 0 || procs.Alive(pid, ticks) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// RemoveTempDir removes a private temp dir made by NewTempDir; any other
// path (a record on disk names it) is left alone.
func RemoveTempDir(dir string) {
	if dir == "" || filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), tempPrefix) {
		return
	}
	_ = os.RemoveAll(dir)
}
