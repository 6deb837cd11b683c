package confinecmd_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestCwdReport: through both binaries, --cwd-report N hands the confined
// command a report file (TOOLHOST_CWD_FILE) and, once it has exited,
// writes the directory it reported to descriptor N and removes the file;
// a descriptor the caller did not give open for writing is refused before
// anything runs (the runtime's own read-only descriptors sit at 3 and 4
// when the caller gave none).
func TestCwdReport(t *testing.T) {
	t.Parallel()
	for name, argv := range testutil.ConfineCommands(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			proj, unit := unitProject(t)
			run := func(extra []*os.File, script string) (string, int) {
				cmd := exec.Command(argv[0], append(argv[1:], "--agent", "devloop-coder", "--project-dir", proj, "--cwd-report", "3",
					"--", "bash", "-c", script)...)
				cmd.Dir, cmd.ExtraFiles = unit, extra
				stdout, stderr, code := testutil.RunCommand(t, cmd, "")
				return stdout + stderr, code
			}

			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			out, code := run([]*os.File{w}, `echo "$TOOLHOST_CWD_FILE" > file.txt; cd .. && pwd -P >| "$TOOLHOST_CWD_FILE"; exit 4`)
			w.Close()
			got, _ := io.ReadAll(r)
			r.Close()
			if code != 4 || string(got) != filepath.Join(proj, "units") {
				t.Fatalf("exit %d (%s), report %q; want exit 4 and %s", code, out, got, filepath.Join(proj, "units"))
			}
			named, err := os.ReadFile(filepath.Join(unit, "file.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if f := strings.TrimSpace(string(named)); !filepath.IsAbs(f) {
				t.Fatalf("TOOLHOST_CWD_FILE = %q", f)
			} else if _, err := os.Lstat(f); err == nil {
				t.Errorf("the report file %s was left behind", f)
			}

			ro, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			for what, extra := range map[string][]*os.File{"no descriptor": nil, "a read-only one": {ro}} {
				out, code := run(extra, "touch ran.txt")
				if code != 2 || !strings.Contains(out, "--cwd-report 3: not a descriptor open for writing") {
					t.Errorf("%s: exit %d (%s); want 2 and the reason", what, code, out)
				}
				if _, err := os.Stat(filepath.Join(unit, "ran.txt")); err == nil {
					t.Fatalf("%s: the command ran", what)
				}
			}
		})
	}
}

// TestCommandCannotReachItsConfinesMemory: through both binaries, with and
// without --hold, no thread of the process that started CMD (confine, or
// its holder) lets CMD open its memory. One of them, the thread that
// forked CMD, is in CMD's own Landlock domain for as long as CMD runs;
// through it CMD could write the memory of a process whose other threads
// are not confined at all.
func TestCommandCannotReachItsConfinesMemory(t *testing.T) {
	t.Parallel()
	for name, argv := range testutil.ConfineCommands(t) {
		for _, hold := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s hold=%v", name, hold), func(t *testing.T) {
				t.Parallel()
				proj, unit := unitProject(t)
				args := append(argv[1:], "--agent", "devloop-coder", "--project-dir", proj)
				if hold {
					args = append(args, "--hold")
				}
				script := `n=0; for t in /proc/$PPID/task/*; do (: < "$t/mem") 2>/dev/null && n=$((n+1)); done; echo mem=$n`
				cmd := exec.Command(argv[0], append(args, "--", "sh", "-c", script)...)
				cmd.Dir = unit
				if stdout, stderr, code := testutil.RunCommand(t, cmd, ""); code != 0 || strings.TrimSpace(stdout) != "mem=0" {
					t.Fatalf("exit %d, stdout %q, stderr %q; want mem=0: no thread's memory open to the command", code, stdout, stderr)
				}
			})
		}
	}
}
