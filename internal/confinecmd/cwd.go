package confinecmd

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The hook's rewrite of the agent CLI's Bash has the confined shell write
// the directory it ended in to a report file (the one extra file --cwd-file
// grants), and then, unconfined, takes the report with --take-cwd to move the CLI's shell there (internal/hook,
// cwd.go). The confined command controls the report entirely, so it is
// read as a directory name and nothing else.

// maxCwdReport is the most of a report read: far longer than any path.
const maxCwdReport = 4096

// TakeCwdReport reads the report file (a regular file, never through a
// symlink, at most maxCwdReport bytes), removes it, and returns what it
// names when that is the absolute path of a directory, else "".
func TakeCwdReport(file string) string {
	if file == "" {
		return ""
	}
	defer os.Remove(file)
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	f := os.NewFile(uintptr(fd), file)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCwdReport+1))
	if err != nil || len(b) > maxCwdReport {
		return ""
	}
	dir := strings.TrimSuffix(string(b), "\n")
	if !filepath.IsAbs(dir) || strings.ContainsAny(dir, "\x00\n") {
		return ""
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}
