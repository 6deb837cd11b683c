package confinecmd_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestHold: through both binaries, `confine --hold` exits with CMD's status
// as soon as CMD exits, while the project's live registry still shows a
// holder for the background job CMD left; the holder goes once that job
// ends. CMD is confined all the while: its write outside the allow-list
// fails on disk, the one inside lands.
func TestHold(t *testing.T) {
	t.Parallel()
	for name, argv := range testutil.ConfineCommands(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			proj, unit := unitProject(t)
			fifo := filepath.Join(proj, "release")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			script := `(read -r line < "$1"; echo "$line" > late.txt) & echo in > in.txt; echo out > ../../out.txt; exit 3`
			cmd := exec.Command(argv[0], append(argv[1:], "--hold", "--agent", "devloop-coder", "--project-dir", proj,
				"--", "bash", "-c", script, "bash", fifo)...)
			cmd.Dir = unit
			// A file, not a pipe: the background job keeps CMD's streams.
			stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer stderr.Close()
			cmd.Stderr = stderr
			err = cmd.Run()
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 3 {
				b, _ := os.ReadFile(stderr.Name())
				t.Fatalf("exit %v (stderr %s), want CMD's 3", err, b)
			}
			if _, err := os.Stat(filepath.Join(unit, "in.txt")); err != nil {
				t.Error("the write inside the allow-list did not happen")
			}
			if _, err := os.Stat(filepath.Join(proj, "out.txt")); err == nil {
				t.Error("CMD wrote outside the allow-list")
			}
			holders, err := live.Running(proj)
			if err != nil || len(holders) != 1 || holders[0].Agent != "devloop-coder" {
				t.Fatalf("live registry while the background job runs: %+v %v, want one devloop-coder holder", holders, err)
			}
			// The job reads the fifo: opening it for writing releases it.
			if err := os.WriteFile(fifo, []byte("late\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				holders, err = live.Running(proj)
				if err == nil && len(holders) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("live registry after the job ended: %+v %v, want empty", holders, err)
				}
			}
			if b, err := os.ReadFile(filepath.Join(unit, "late.txt")); err != nil || string(b) != "late\n" {
				t.Errorf("the background job's write: %q %v", b, err)
			}
		})
	}
}

// unitProject is a project (its path with no symbolic link in it) with the
// unit directory units/a, where the tests run their commands.
func unitProject(t *testing.T) (proj, unit string) {
	t.Helper()
	proj, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	unit = filepath.Join(proj, "units/a")
	if err := os.MkdirAll(unit, 0o755); err != nil {
		t.Fatal(err)
	}
	return proj, unit
}
