package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/claudecli"
)

// TestRealClaudeBashConfined: with toolhost's hook installed as
// `mcp-config --settings` prints it, the real Claude CLI's own Bash runs
// confined to the agent's allow-list. The scripted model writes outside it
// (prd/, the coder may not) and inside it (units/): the first file is not
// written and the model receives the kernel's refusal, the second is
// written. The rewrite leaves the approval to the CLI: in the default mode
// with the agent's --allowedTools and in bypassPermissions the commands
// run; in the default mode without them the CLI's own check still refuses
// (it would ask a user), as it would without the hook, and nothing runs.
func TestRealClaudeBashConfined(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	for _, tc := range []struct {
		name    string
		mode    string
		allowed bool
		runs    bool
	}{
		{name: "default+allowedTools", allowed: true, runs: true},
		{name: "bypassPermissions", mode: "bypassPermissions", runs: true},
		{name: "default-without-approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			project := t.TempDir()
			for _, d := range []string{"prd", "units/demo"} {
				if err := os.MkdirAll(filepath.Join(project, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			m := claudecli.NewModel(t,
				claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_out", Name: "Bash",
					Input: map[string]any{"command": "echo hacked > prd/hack.html", "description": "write outside"}}}},
				claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_in", Name: "Bash",
					Input: map[string]any{"command": "echo fine > units/demo/ok.txt && cat units/demo/ok.txt", "description": "write inside"}}}},
			)
			o := claudecli.RunOptions{Dir: project, PermissionMode: tc.mode,
				Settings: run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--settings")}
			if tc.allowed {
				o.AllowedTools = allowedTools(t, bin, "devloop-coder", project)
			}
			res := claudecli.Run(t, m, o)
			if res.ExitCode != 0 {
				t.Fatalf("claude: %s", res)
			}
			if _, err := os.Stat(filepath.Join(project, "prd/hack.html")); err == nil {
				t.Fatal("the CLI's Bash wrote prd/hack.html, outside the coder's allow-list")
			}
			out, in := m.ToolResult(t, "toolu_out"), m.ToolResult(t, "toolu_in")
			got, err := os.ReadFile(filepath.Join(project, "units/demo/ok.txt"))
			if !tc.runs {
				// The CLI's own check asks about the rewritten command (2.1.332:
				// "… in this command can't be checked before it runs"), and -p
				// has nobody to ask; it is the CLI's refusal, not the hook's.
				if err == nil || !out.IsError || !in.IsError || strings.Contains(out.Text, "toolhost") || strings.Contains(in.Text, "toolhost") {
					t.Fatalf("without approval: ok.txt %q (%v), results %+v %+v; want both refused by the CLI", got, err, out, in)
				}
				return
			}
			if !out.IsError || !strings.Contains(out.Text, "prd/hack.html: Permission denied") {
				t.Errorf("the write outside: %+v, want the kernel's refusal in the tool_result", out)
			}
			if err != nil || string(got) != "fine\n" || in.IsError || !strings.Contains(in.Text, "fine") {
				t.Errorf("the write inside: ok.txt %q (%v), result %+v; want it written and its output returned", got, err, in)
			}
		})
	}
}

// TestRealClaudeSettingsRulesStillApply: the rewrite to `toolhost confine`
// hides the command from the CLI's own settings rules, which would match
// only the rewritten text; the hook applies the project's Bash deny and
// ask rules to the command as written. In bypassPermissions (where the
// CLI still honours deny and ask rules) a denied and an asked command
// leave nothing on disk and the model reads which rule refused; a command
// no rule names runs, confined.
func TestRealClaudeSettingsRulesStillApply(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, "units/demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "units/demo/keep.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"permissions":{"deny":["Bash(touch:*)"],"ask":["Bash(rm *)"]}}`
	if err := os.WriteFile(filepath.Join(project, ".claude/settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	m := claudecli.NewModel(t,
		claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_deny", Name: "Bash",
			Input: map[string]any{"command": "echo start && touch units/demo/denied.txt", "description": "a denied program"}}}},
		claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_ask", Name: "Bash",
			Input: map[string]any{"command": "rm units/demo/keep.txt", "description": "an asked program"}}}},
		claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_ok", Name: "Bash",
			Input: map[string]any{"command": "echo fine > units/demo/ok.txt", "description": "no rule"}}}},
	)
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, PermissionMode: "bypassPermissions",
		Settings: run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--settings")})
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}
	if _, err := os.Stat(filepath.Join(project, "units/demo/denied.txt")); err == nil {
		t.Error("the CLI ran touch although the project's settings deny Bash(touch:*)")
	}
	if r := m.ToolResult(t, "toolu_deny"); !r.IsError || !strings.Contains(r.Text, "Bash(touch:*)") {
		t.Errorf("the denied command: %+v, want an error naming the rule", r)
	}
	if _, err := os.Stat(filepath.Join(project, "units/demo/keep.txt")); err != nil {
		t.Errorf("the CLI ran rm although the project's settings ask first for Bash(rm *) and -p cannot ask: %v", err)
	}
	if r := m.ToolResult(t, "toolu_ask"); !r.IsError {
		t.Errorf("the asked command: %+v, want refused (nobody to ask in -p)", r)
	}
	if got, err := os.ReadFile(filepath.Join(project, "units/demo/ok.txt")); err != nil || string(got) != "fine\n" {
		t.Errorf("the command no rule names: ok.txt %q (%v), want written", got, err)
	}
}
