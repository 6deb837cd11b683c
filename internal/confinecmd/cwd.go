package confinecmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/procs"
)

// The hook's rewrite of the agent CLI's Bash asks, with --cwd-report FD,
// for the directory the confined shell ends in: confine makes a report
// file (the one extra file --cwd-file grants; its path in CMD's
// TOOLHOST_CWD_FILE), and once CMD has exited it reads the report,
// unconfined, and writes the directory to FD, where the CLI's shell takes
// it to change there (internal/hook, cwd.go). The confined command
// controls the report entirely, so it is read as a directory name and
// nothing else.

// CwdFileEnv names the report file in the confined command's environment.
const CwdFileEnv = "TOOLHOST_CWD_FILE"

func cwdFileEnv(file string) []string {
	if file == "" {
		return nil
	}
	return []string{CwdFileEnv + "=" + file}
}

// makeCwdReport makes the report file for --cwd-report (o.CwdFile) and
// returns what to run once CMD has exited: write the directory reported
// to the descriptor and remove the file. Without --cwd-report it does
// nothing. A report file that cannot be made costs only the report: CMD
// still runs, and the CLI's shell stays where it was.
func makeCwdReport(o *Options) (func(), error) {
	if o.CwdReport == 0 {
		return func() {}, nil
	}
	if o.CwdReport < 3 {
		return nil, fmt.Errorf("--cwd-report %d: the report goes to a descriptor of its own (3 or more), not a standard stream", o.CwdReport)
	}
	if o.CwdFile != "" {
		return nil, errors.New("--cwd-report makes its own report file: give it without --cwd-file")
	}
	// Open for writing, and given by the caller: a descriptor the caller
	// did not give may still be open here, the Go runtime's own (it reads
	// the cgroup's CPU quota through descriptors it keeps), but read-only.
	if fl, err := unix.FcntlInt(uintptr(o.CwdReport), unix.F_GETFL, 0); err != nil || fl&unix.O_ACCMODE == unix.O_RDONLY {
		return nil, fmt.Errorf("--cwd-report %d: not a descriptor open for writing", o.CwdReport)
	}
	out := os.NewFile(uintptr(o.CwdReport), "cwd report")
	self, err := procs.Self()
	if err == nil {
		o.CwdFile, err = confine.NewReportFile(self.PID, self.StartTicks)
	}
	if err == nil && !filepath.IsAbs(o.CwdFile) {
		os.Remove(o.CwdFile)
		err = fmt.Errorf("the temp dir %s is not an absolute path", os.TempDir())
	}
	if err != nil {
		o.CwdFile = ""
		fmt.Fprintln(os.Stderr, "toolhost confine: the directory this command ends in is not kept:", err)
		return func() { out.Close() }, nil
	}
	return func() {
		if dir := TakeCwdReport(o.CwdFile); dir != "" {
			_, _ = io.WriteString(out, dir)
		}
		out.Close()
	}, nil
}

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
	// Only the canonical path of a directory (the runner reports pwd -P):
	// through a symbolic link — /proc/PID/root of a process in another
	// mount namespace, say — the CLI's shell could land where the command
	// itself could not go.
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
		return ""
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}
