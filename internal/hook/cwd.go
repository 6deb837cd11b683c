package hook

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/claudecode"
)

// The Claude CLI's Bash keeps its working directory from one call to the
// next: it runs each command in its own shell and records where that shell
// ended. A command rewritten to run under `toolhost confine` changes
// directory in the confined child, so the CLI's shell would stay where it
// was. keepCwd makes the rewrite carry the directory back:
//
//   - the confined bash runs the command with eval (its text is an argument,
//     never spliced into code) and then writes `pwd -P` into a report file
//     made for this call by mktemp, the one file outside its allow-list it
//     may write (confine --cwd-file);
//   - `toolhost hook cwd FILE`, unconfined, reads at most 4 KiB of it,
//     removes it, and prints it only when it is the absolute path of a
//     directory; the CLI's shell then changes there with the cd builtin
//     (zsh's -q: no chpwd hooks) and exits with the command's status.
//
// The confined command controls the report entirely, so it is treated as a
// directory name and nothing else: it is never evaluated, and a cd is all a
// report can cause (to a place the command could have cd'ed to itself). A
// command that exits early writes no report and the directory stays, as it
// does without the rewrite.
//
// The CLI's own check of a command refuses some shapes outright, in every
// mode where it asks: a brace next to a quote ("expansion obfuscation",
// so no { …; } group), an rm of a path held in a variable next to a
// bash -c script. The rewrite has neither.

// cwdRunner is the script the confined bash runs: $1 the report file, $2
// the command.
const cwdRunner = `__toolhost_cwd_file=$1 __toolhost_command=$2; shift 2; eval "$__toolhost_command"; __toolhost_status=$?; pwd -P >| "$__toolhost_cwd_file"; exit $__toolhost_status`

// maxCwdReport is the most of a report read: far longer than any path.
const maxCwdReport = 4096

// keepCwd is the rewritten command: confine (its argv up to, not
// including, "--") running command, and the tail that moves the CLI's
// shell to where the command ended.
func keepCwd(confine []string, command string) string {
	const file = `"$__toolhost_cwd"`
	self := claudecode.ShellJoin(confine[:1])
	run := claudecode.ShellJoin(confine) + " --cwd-file " + file + " " +
		claudecode.ShellJoin([]string{"--", "bash", "-c", cwdRunner, "bash"}) + " " + file + " " + claudecode.ShellJoin([]string{command})
	return `__toolhost_cwd=$(mktemp) && ` + run + `; __toolhost_status=$?; ` +
		`__toolhost_dir=$(` + self + ` hook cwd ` + file + `); ` +
		`case $__toolhost_dir in /*) if [ -n "$ZSH_VERSION" ]; then builtin cd -q -- "$__toolhost_dir"; else builtin cd -- "$__toolhost_dir"; fi;; esac; ` +
		`(exit $__toolhost_status)`
}

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
