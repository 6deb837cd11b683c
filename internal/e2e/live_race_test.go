package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/testutil"
)

// swapLoop swaps the directory src of the working directory for a symbolic
// link to outside and back, as fast as it can, detached from everything it
// can detach from: its own session (setsid), SIGTERM and SIGHUP ignored —
// until the test's directory is gone (so a failing run leaves nothing).
func swapLoop(outside string) string {
	return fmt.Sprintf(`ln -sfn %s lnk && setsid nohup sh -c 'trap "" TERM HUP; while [ -L lnk ]; do mv -T src real.tmp; mv -T lnk src; mv -T src lnk; mv -T real.tmp src; done' >/dev/null 2>&1 &`, outside)
}

// cliWrite is the agent CLI's Write of path: the hook decides, and when it
// does not deny, the CLI writes the file itself, unconfined, following
// whatever the path is by then. It returns the hook's deny reason ("" when
// the write was let through).
func cliWrite(t *testing.T, bin, agent, project, path string) string {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": project,
		"tool_input": map[string]any{"file_path": path, "content": "written\n"}})
	hook := exec.Command(bin, "hook", "pretooluse", "--agent", agent, "--project-dir", project)
	hook.Stdin = bytes.NewReader(payload)
	out, err := hook.Output()
	if err != nil {
		t.Fatalf("hook: %v", err)
	}
	var res struct {
		Out struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if len(bytes.TrimSpace(out)) > 0 {
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("hook output %q: %v", out, err)
		}
	}
	if res.Out.Decision == "deny" {
		return res.Out.Reason
	}
	_ = os.WriteFile(path, []byte("written\n"), 0o644)
	return ""
}

// raceProject is a project with rel/src and a directory outside it holding
// victim.txt.
func raceProject(t *testing.T, rel string) (project, outside, dir string) {
	t.Helper()
	project, outside = t.TempDir(), t.TempDir()
	dir = filepath.Join(project, rel)
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return project, outside, dir
}

// restoreSrc puts dir/src back as a directory after a swapper stopped
// half-way through a swap.
func restoreSrc(t *testing.T, dir string) {
	t.Helper()
	src := filepath.Join(dir, "src")
	if fi, err := os.Lstat(src); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		_ = os.Rename(src, filepath.Join(dir, "lnk"))
	}
	if _, err := os.Lstat(src); err != nil {
		if err := os.Rename(filepath.Join(dir, "real.tmp"), src); err != nil {
			t.Fatal(err)
		}
	}
}

// assertNothingOutside fails when anything but the planted file is in
// outside.
func assertNothingOutside(t *testing.T, outside string) {
	t.Helper()
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("files landed outside the project: %v", names)
	}
}

// TestBashToolSwapperCannotRaceTheHook: the agent's bash tool of a real
// serve starts a background swapper that leaves its session and ignores
// SIGTERM, and returns; the agent CLI then writes into the swapped
// directory, checked by the hook and written unconfined, again and again.
// Nothing lands outside the project: the swapper does not outlive the call
// (it cannot leave its holder's group), so every such Write finds nothing
// running — and the ordinary ones are let through and land.
func TestBashToolSwapperCannotRaceTheHook(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project, outside, demo := raceProject(t, "units/demo")
	c := testutil.Serve(t, "--agent", "devloop-coder", "--project-dir", project)
	const tries, writesPerTry = 15, 4
	landed := 0
	for i := range tries {
		r := runBash(t, c, "cd units/demo && "+swapLoop(outside)+" sleep 0.05")
		if r.ExitCode != 0 {
			t.Fatalf("try %d: the swapper did not start: %+v", i, r)
		}
		if h, err := live.Running(project); err != nil || len(h) != 0 {
			t.Fatalf("try %d: after the call returned, still registered as running: %+v %v", i, h, err)
		}
		restoreSrc(t, demo)
		for j := range writesPerTry {
			path := filepath.Join(demo, "src", fmt.Sprintf("f%d-%d.txt", i, j))
			if reason := cliWrite(t, bin, "devloop-coder", project, path); reason != "" {
				t.Errorf("try %d: an ordinary Write with nothing running was refused: %s", i, reason)
			} else if b, err := os.ReadFile(path); err == nil && string(b) == "written\n" {
				landed++
			}
		}
		assertNothingOutside(t, outside)
	}
	if landed != tries*writesPerTry {
		t.Errorf("%d of %d ordinary writes landed in the project", landed, tries*writesPerTry)
	}
}

// TestUnitSwapperRefusesTheHook: a unit spawn_units started (a real serve)
// swaps a directory of the agent's as fast as it can; while it runs, every
// CLI Write beneath that directory is refused by the hook with the way to
// write instead, and nothing lands outside; once the unit is stopped, the
// same Write is let through and lands.
func TestUnitSwapperRefusesTheHook(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project, outside, demo := raceProject(t, "integration/demo")
	c := testutil.Serve(t, "--agent", "devloop-integrator", "--project-dir", project)
	res := testutil.CallTool(t, c, "spawn_units", map[string]any{"action": "start", "units": []map[string]any{{
		"id": "swap", "cwd": "integration/demo", "argv": []string{"sh", "-c", swapLoop(outside) + " sleep 600"}}}})
	if res.IsError {
		t.Fatalf("spawn_units start: %s", res.Text())
	}
	stop := func() {
		if r := testutil.CallTool(t, c, "spawn_units", map[string]any{"action": "stop", "units": []map[string]any{{"id": "swap"}}}); r.IsError {
			t.Fatalf("spawn_units stop: %s", r.Text())
		}
	}
	const tries = 40
	for i := range tries {
		path := filepath.Join(demo, "src", fmt.Sprintf("f%d.txt", i))
		reason := cliWrite(t, bin, "devloop-integrator", project, path)
		racing := strings.Contains(reason, "unit swap of devloop-integrator started earlier is still running") &&
			strings.Contains(reason, "Write the file with Bash instead")
		if !racing && !strings.Contains(reason, "symlink") {
			stop()
			t.Fatalf("write %d while the unit runs: %q, want the hook's refusal", i, reason)
		}
	}
	assertNothingOutside(t, outside)
	stop()
	if h, err := live.Running(project); err != nil || len(h) != 0 {
		t.Fatalf("after the stop, still registered as running: %+v %v", h, err)
	}
	restoreSrc(t, demo)
	path := filepath.Join(demo, "src", "after.txt")
	if reason := cliWrite(t, bin, "devloop-integrator", project, path); reason != "" {
		t.Fatalf("a Write once the unit is stopped: %s", reason)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "written\n" {
		t.Fatalf("after.txt: %q %v", b, err)
	}
	assertNothingOutside(t, outside)
}
