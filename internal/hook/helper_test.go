package hook_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/claudecode"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestHookRewriteTakesTheHelper: the hook's Bash rewrite runs the small
// helper installed beside toolhost (confine and the directory report
// both), and toolhost's own `confine` when toolhost is alone or the helper
// beside it is of another build; either way
// the command is confined (its write outside the allow-list fails on disk,
// the one inside lands) and the shell ends where the command cd'ed to.
func TestHookRewriteTakesTheHelper(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	alone := filepath.Join(t.TempDir(), "toolhost")
	if err := os.Link(bin, alone); err != nil {
		t.Fatal(err)
	}
	// A helper of another build beside toolhost (here: linked with other
	// flags) may speak another holder protocol: toolhost runs its own.
	stale := filepath.Join(t.TempDir(), "toolhost")
	if err := os.Link(bin, stale); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-ldflags=-s", "-o", filepath.Join(filepath.Dir(stale), confine.HelperName), "./cmd/toolhost-confine")
	build.Dir, build.Env = testutil.RepoRoot(t), append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the other helper: %v\n%s", err, out)
	}
	for name, tc := range map[string]struct{ bin, confine string }{
		"helper beside toolhost": {bin, claudecode.ShellJoin([]string{testutil.ConfineHelper(t)})},
		"toolhost alone":         {alone, claudecode.ShellJoin([]string{alone, "confine"})},
		"another build's helper": {stale, claudecode.ShellJoin([]string{stale, "confine"})},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			proj := t.TempDir()
			unit := filepath.Join(proj, "units/a")
			if err := os.MkdirAll(filepath.Join(unit, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			hook := exec.Command(tc.bin, "hook", "pretooluse", "--agent", "devloop-coder", "--project-dir", proj)
			hook.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+t.TempDir())
			hook.Stdin = strings.NewReader(testutil.PreToolUsePayload(unit, "Bash", map[string]any{"command": "echo in > in.txt; echo out > ../../prd.txt; cd sub"}))
			out, err := hook.Output()
			if err != nil {
				t.Fatalf("hook: %v", err)
			}
			var answer struct {
				HookSpecificOutput struct {
					UpdatedInput struct{ Command string } `json:"updatedInput"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal(out, &answer); err != nil {
				t.Fatalf("hook answered %q: %v", out, err)
			}
			command := answer.HookSpecificOutput.UpdatedInput.Command
			if !strings.Contains(command, "$("+tc.confine+" --hold --agent devloop-coder ") || strings.Count(command, tc.confine) != 1 {
				t.Fatalf("rewritten command %q, want it run by %s", command, tc.confine)
			}
			stdout, stderr, code := runShell(t, unit, command+`; echo "ended in $PWD"`, os.Environ())
			if !strings.Contains(stderr, "../../prd.txt: Permission denied") || stdout != "ended in "+filepath.Join(unit, "sub")+"\n" || code != 0 {
				t.Fatalf("exit %d stdout %q stderr %q; want the write outside refused and the shell in sub/", code, stdout, stderr)
			}
			if b, err := os.ReadFile(filepath.Join(unit, "in.txt")); err != nil || !bytes.Equal(b, []byte("in\n")) {
				t.Errorf("the write inside the allow-list: %q %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(proj, "prd.txt")); err == nil {
				t.Error("the rewritten command wrote outside the allow-list")
			}
		})
	}
}
