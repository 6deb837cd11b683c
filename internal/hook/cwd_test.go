package hook_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliShell runs a rewritten command the way the Claude CLI runs a Bash
// call: in a shell started in dir, `eval CMD && pwd -P >| FILE`, and
// returns the directory the CLI records for the next call (dir itself when
// the command failed and nothing was recorded), with the output.
func cliShell(t *testing.T, dir, command string) (next, stdout, stderr string, code int) {
	t.Helper()
	record := filepath.Join(t.TempDir(), "cwd")
	script := `eval "$1" && pwd -P >| "$2"`
	stdout, stderr, code = runShell(t, dir, `bash -c '`+strings.ReplaceAll(script, `'`, `'\''`)+`' bash `+shellQuote(command)+` `+shellQuote(record), os.Environ())
	next = dir
	if b, err := os.ReadFile(record); err == nil {
		next = strings.TrimSpace(string(b))
	}
	return next, stdout, stderr, code
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestHookRewriteKeepsCwd: over several calls, the CLI's shell ends where
// the confined command left it, as it would without the rewrite; the exit
// status and the output are the command's.
func TestHookRewriteKeepsCwd(t *testing.T) {
	t.Parallel()
	proj, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(proj, "units/u1/tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := proj
	for i, step := range []struct {
		command, wantDir, wantOut string
		wantCode                  int
	}{
		{"cd units/u1/tests && pwd", "units/u1/tests", proj + "/units/u1/tests\n", 0},
		{"pwd", "units/u1/tests", proj + "/units/u1/tests\n", 0},
		{"cd .. && echo up", "units/u1", "up\n", 0},
		{"cd tests; false", "units/u1", "", 1},
		{"cd /; cd " + proj + " && ls units", ".", "u1\n", 0},
	} {
		updated, refused := rewriteBash(t, proj, map[string]any{"command": step.command})
		if updated == nil {
			t.Fatalf("step %d: not rewritten (%s)", i, refused)
		}
		next, out, stderr, code := cliShell(t, dir, updated["command"].(string))
		want := filepath.Join(proj, step.wantDir)
		if next != want || out != step.wantOut || code != step.wantCode {
			t.Fatalf("step %d %q: the CLI's shell ends in %s, stdout %q, exit %d (stderr %q); want %s, %q, exit %d",
				i, step.command, next, out, code, stderr, want, step.wantOut, step.wantCode)
		}
		dir = next
	}
}

// TestHookRewriteCwdReportIsOnlyADirectory: the confined command controls
// the directory report entirely; whatever it writes there, the unconfined
// tail runs nothing and at most changes to a directory that exists. The
// report file itself cannot be swapped for a FIFO or a symlink (the
// kernel refuses), and a huge report costs a bounded read.
func TestHookRewriteCwdReportIsOnlyADirectory(t *testing.T) {
	t.Parallel()
	proj, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(proj, "units/u1")
	evil := filepath.Join(unit, "$(touch PWNED)")
	if err := os.MkdirAll(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(t.TempDir(), "pwned")
	touch := "touch " + pwned
	for _, tc := range []struct {
		name, command, wantDir string
	}{
		{"code after a separator", `printf '%s' "/; ` + touch + `" >| "$__toolhost_cwd_file"; exit 0`, proj},
		{"command substitution", `printf '%s' '$(` + touch + `)' >| "$__toolhost_cwd_file"; exit 0`, proj},
		{"backticks", "printf '%s' '`" + touch + "`' >| \"$__toolhost_cwd_file\"; exit 0", proj},
		{"a second line", `printf '/\n` + touch + `\n' >| "$__toolhost_cwd_file"; exit 0`, proj},
		{"a relative path", `printf 'units' >| "$__toolhost_cwd_file"; exit 0`, proj},
		{"a file, not a directory", `printf '/etc/hostname' >| "$__toolhost_cwd_file"; exit 0`, proj},
		{"a directory whose name is code", `cd '` + evil + `'`, evil},
		{"the report swapped for a FIFO", `rm -f "$__toolhost_cwd_file"; mkfifo "$__toolhost_cwd_file"; cd units`, filepath.Join(proj, "units")},
		{"the report swapped for a symlink", `ln -sf /etc/passwd "$__toolhost_cwd_file"; cd units`, filepath.Join(proj, "units")},
		{"a path through a symbolic link", `cd units && ln -s u1 lnk && printf '%s' "$PWD/lnk" >| "$__toolhost_cwd_file"; exit 0`, proj},
		{"a path through a magic link", `printf '%s' "/proc/self/root$PWD/units" >| "$__toolhost_cwd_file"; exit 0`, proj},
		{"a report of 100 MB", `head -c 100000000 /dev/zero | tr '\0' / >| "$__toolhost_cwd_file"; exit 0`, proj},
	} {
		t.Run(tc.name, func(t *testing.T) {
			updated, refused := rewriteBash(t, proj, map[string]any{"command": tc.command})
			if updated == nil {
				t.Fatalf("not rewritten (%s)", refused)
			}
			next, _, stderr, _ := cliShell(t, proj, updated["command"].(string))
			if _, err := os.Stat(pwned); err == nil {
				t.Fatalf("the report made the unconfined tail run a command (stderr %q)", stderr)
			}
			if _, err := os.Stat(filepath.Join(proj, "PWNED")); err == nil {
				t.Fatal("a directory name ran as code")
			}
			if next != tc.wantDir {
				t.Errorf("the CLI's shell ends in %s, want %s (stderr %q)", next, tc.wantDir, stderr)
			}
		})
	}
}
