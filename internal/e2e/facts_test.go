package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/shellcorpus"
)

// factsPolicies are the policies the shell corpus is judged under, per
// door: a deny rule and a confirm rule over the forbidden programs, and an
// allow rule over the safe ones that lifts a confirm (the bash tool's own
// entry in serve; a confirm-everything rule after it in the hook, where
// allow changes nothing but stops the rules that follow).
func factsPolicies(door string) map[string]string {
	tool := "bash"
	if door == "hook" {
		tool = "Bash"
	}
	allow := `{"tools":{"bash":{"confirm":true}},"rules":` + shellcorpus.Rules("allow", tool) + `}`
	if door == "hook" {
		rs := strings.TrimSuffix(shellcorpus.Rules("allow", tool), "]") +
			`,{"id":"ask-the-rest","tool":"Bash","effect":"confirm","reason":"a human reads what is not known to be safe"}]`
		allow = `{"tools":{},"rules":` + rs + `}`
	}
	return map[string]string{
		"deny":    `{"tools":{},"rules":` + shellcorpus.Rules("deny", tool) + `}`,
		"confirm": `{"tools":{},"rules":` + shellcorpus.Rules("confirm", tool) + `}`,
		"allow":   allow,
	}
}

// judgeRun checks what a command that ran (unrefused, unasked) did under
// one of the corpus policies: the forbidden programs must not have run
// under deny or confirm, nothing but the safe ones under allow.
func judgeRun(t *testing.T, policy string, tc shellcorpus.Case, ran []shellcorpus.Invocation) {
	t.Helper()
	switch policy {
	case "deny", "confirm":
		if p, ok := shellcorpus.RanForbidden(ran); ok {
			t.Errorf("%s: the %s rule let it run, and bash ran %s (%v)", tc.Title(), policy, p, ran)
		}
	case "allow":
		if p, ok := shellcorpus.RanUnsafe(ran); ok {
			t.Errorf("%s: the allow rule let it run without a human, and bash ran %s (%v)", tc.Title(), p, ran)
		}
	}
}

// ranBy drops the shell the door itself starts from what the stubs
// recorded: the bash tool's bash -c COMMAND, or the hook's rewrite's
// bash -c RUNNER bash COMMAND (internal/hook, cwd.go).
func ranBy(ran []shellcorpus.Invocation, command string) []shellcorpus.Invocation {
	if len(ran) == 0 || ran[0].Name != "bash" {
		return ran
	}
	a := ran[0].Args
	if (len(a) == 2 && a[0] == "-c" && a[1] == command) || (len(a) == 4 && a[0] == "-c" && a[2] == "bash" && a[3] == command) {
		return ran[1:]
	}
	return ran
}

// factsProject makes a project with the coder's unit directory, the
// command's working directory; the stubs record into it (the one place
// the confined command may write).
func factsProject(t *testing.T) (project, unitDir, log string) {
	t.Helper()
	project = t.TempDir()
	unitDir = filepath.Join(project, "units", "u")
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return project, unitDir, filepath.Join(project, "units", "calls.log")
}

func resetUnit(t *testing.T, unitDir, log string, tc shellcorpus.Case) {
	t.Helper()
	if err := os.RemoveAll(unitDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tc.Setup(t, unitDir)
}

// TestCorpusThroughServe runs the shell corpus through `toolhost serve`'s
// bash tool, confined as in production, with the stubs as the only
// programs on PATH, under each corpus policy, and judges each call by its
// effect: a refused or held call ran nothing; a call that ran ran nothing
// the policy forbids or did not allow; everyday commands run unrefused and
// unasked.
func TestCorpusThroughServe(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	testutil.NeedTool(t, "git", "", "apt-get install -y git")
	for policy, doc := range factsPolicies("serve") {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			project, unitDir, log := factsProject(t)
			stubs := shellcorpus.NewStubs(t, t.TempDir(), log)
			env := append(os.Environ(), "PATH="+stubs.Dir, "HOME="+unitDir)
			c, err := stdioclient.Start(bin, []string{"serve", "--agent", "devloop-coder", "--project-dir", project, "--unit", "u",
				"--policy", policyFile(t, doc)}, env)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close(10 * time.Second) })
			held, forbiddenRan := 0, 0
			defer func() { checkCounts(t, "serve", policy, held, forbiddenRan) }()
			for _, tc := range shellcorpus.Cases {
				resetUnit(t, unitDir, log, tc)
				command := tc.Command(stubs.Dir)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				r, err := c.CallTool(ctx, "bash", map[string]any{"command": command}, nil)
				cancel()
				if err != nil {
					t.Fatalf("%s: %v\n%s", tc.Title(), err, c.Stderr())
				}
				ran := ranBy(shellcorpus.ReadLog(t, log), command)
				text := r.Text()
				isHeld := r.IsError && (strings.Contains(text, "refused by policy rule") || strings.Contains(text, "needs_confirmation") || strings.Contains(text, "Bash guard:"))
				if _, ok := shellcorpus.RanForbidden(ran); ok {
					forbiddenRan++
				}
				if isHeld {
					held++
					if len(ran) > 0 {
						t.Errorf("%s: refused or held (%s), yet it ran %v", tc.Title(), firstLine(text), ran)
					}
					if tc.Ordinary {
						t.Errorf("%s: an everyday command was refused or held under %s: %s", tc.Title(), policy, firstLine(text))
					}
					continue
				}
				judgeRun(t, policy, tc, ran)
			}
		})
	}
}

// TestCorpusThroughTheHook feeds the shell corpus to `toolhost hook
// pretooluse` as Claude CLI Bash calls under each corpus policy, then
// runs what the CLI would run when the hook neither denies nor asks — its
// updatedInput, the command under `toolhost confine` — and judges that by
// its effect.
func TestCorpusThroughTheHook(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	bash := testutil.NeedTool(t, "bash", "", "apt-get install -y bash")
	testutil.NeedTool(t, "git", "", "apt-get install -y git")
	for policy, doc := range factsPolicies("hook") {
		pol := policyFile(t, doc)
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			project, unitDir, log := factsProject(t)
			stubs := shellcorpus.NewStubs(t, t.TempDir(), log)
			env := []string{"PATH=" + stubs.Dir, "HOME=" + unitDir, "LC_ALL=C"}
			held, forbiddenRan := 0, 0
			defer func() { checkCounts(t, "hook", policy, held, forbiddenRan) }()
			for _, tc := range shellcorpus.Cases {
				resetUnit(t, unitDir, log, tc)
				command := tc.Command(stubs.Dir)
				payload, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": unitDir, "hook_event_name": "PreToolUse",
					"tool_name": "Bash", "tool_input": map[string]any{"command": command}})
				hook := exec.Command(bin, "hook", "pretooluse", "--agent", "devloop-coder", "--project-dir", project, "--policy", pol)
				hook.Stdin = strings.NewReader(string(payload))
				hook.Env = env
				out, err := hook.Output()
				if err != nil {
					t.Fatalf("%s: hook: %v", tc.Title(), err)
				}
				var a struct {
					HookSpecificOutput struct {
						PermissionDecision       string         `json:"permissionDecision"`
						PermissionDecisionReason string         `json:"permissionDecisionReason"`
						UpdatedInput             map[string]any `json:"updatedInput"`
					} `json:"hookSpecificOutput"`
				}
				if err := json.Unmarshal(out, &a); err != nil {
					t.Fatalf("%s: hook output %q: %v", tc.Title(), out, err)
				}
				h := a.HookSpecificOutput
				if h.PermissionDecision != "" {
					held++
					if tc.Ordinary {
						t.Errorf("%s: the hook answered %s for an everyday command under %s: %s", tc.Title(), h.PermissionDecision, policy, h.PermissionDecisionReason)
					}
					continue
				}
				rewritten, _ := h.UpdatedInput["command"].(string)
				if !strings.Contains(rewritten, "confine --hold ") {
					t.Fatalf("%s: the hook allowed without confining: %s", tc.Title(), out)
				}
				run := exec.Command(bash, "-c", rewritten)
				run.Dir, run.Env = unitDir, env
				_ = run.Run() // a failing command is fine: what it ran counts
				all := shellcorpus.ReadLog(t, log)
				ran := ranBy(all, command)
				if len(ran) == len(all) {
					// Its own shell is the first thing a rewritten command
					// runs (before, a mktemp the stubs' PATH lacks ended
					// every rewrite there, and nothing was judged).
					t.Fatalf("%s: the rewritten command never started its shell (ran %v)", tc.Title(), all)
				}
				if _, ok := shellcorpus.RanForbidden(ran); ok {
					forbiddenRan++
				}
				judgeRun(t, policy, tc, ran)
			}
		})
	}
}

// checkCounts makes sure the doors held the attacks rather than the
// commands failing to run: most of the corpus runs a forbidden program
// when it is let through (allow), and is held under deny and confirm.
func checkCounts(t *testing.T, door, policy string, held, forbiddenRan int) {
	t.Helper()
	t.Logf("%s/%s: %d of %d held, %d ran a forbidden program", door, policy, held, len(shellcorpus.Cases), forbiddenRan)
	switch policy {
	case "deny", "confirm":
		if held < 100 {
			t.Errorf("%s %s held only %d commands", door, policy, held)
		}
	case "allow":
		if forbiddenRan != 0 || held < 100 {
			t.Errorf("%s allow: %d held, %d ran a forbidden program", door, held, forbiddenRan)
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
