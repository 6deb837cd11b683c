package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil/claudecli"
)

// TestRealClaudeHookContract pins what the real Claude CLI does with a
// PreToolUse hook's answer for its Bash tool — what toolhost's hook relies
// on (docs/claude-cli.md). The model asks for `echo original > ran.txt`; a
// hook script answers with fixed JSON whose updatedInput, where present, is
// `echo rewritten > ran.txt`. A CLI upgrade that changes any of this fails
// here first.
func TestRealClaudeHookContract(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	const rewritten = `{"command":"echo rewritten > ran.txt"}`
	decision := func(d, extra string) string {
		return `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"` + d + `"` + extra + `}}`
	}
	for _, tc := range []struct {
		name        string
		mode        string // --permission-mode; "" is the default mode with no --allowedTools
		hook        string // the hook's stdout
		exit        int    // the hook's exit status
		slow        bool   // the hook outlives its 1 s timeout before answering
		permissions map[string]any
		ran         string // what ran.txt holds afterwards ("" when nothing ran)
		result      string // in the tool_result the model receives
		isError     bool
		denied      string // the permission_denials entry's tool_input, when denied
		terminal    string // the final event's terminal_reason
	}{
		// allow + updatedInput: the rewritten command runs, with no prompt
		// in any mode (the hook's allow stands in for the CLI's own check).
		{name: "allow+updatedInput/default", hook: decision("allow", `,"updatedInput":`+rewritten), ran: "rewritten", result: "(Bash completed with no output)"},
		{name: "allow+updatedInput/bypass", mode: "bypassPermissions", hook: decision("allow", `,"updatedInput":`+rewritten), ran: "rewritten", result: "(Bash completed with no output)"},
		// updatedInput without a decision: the CLI's own permission check
		// still applies (default mode refuses the redirection in -p).
		{name: "updatedInput-only/default", hook: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":` + rewritten + `}}`,
			result: "needs approval", isError: true, denied: rewritten},
		{name: "updatedInput-only/bypass", mode: "bypassPermissions", hook: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":` + rewritten + `}}`,
			ran: "rewritten", result: "(Bash completed with no output)"},
		// deny: never runs, even in bypassPermissions; the reason reaches
		// the model after the CLI's prefix.
		{name: "deny/bypass", mode: "bypassPermissions", hook: decision("deny", `,"permissionDecisionReason":"R-deny"`),
			result: "PreToolUse:Bash hook error: R-deny", isError: true, denied: `{"command":"echo original > ran.txt","description":"d"}`},
		// ask in -p: nobody to ask, so refused with the reason; the
		// updatedInput replaces the whole input (description is gone).
		{name: "ask+updatedInput/bypass", mode: "bypassPermissions", hook: decision("ask", `,"permissionDecisionReason":"R-ask","updatedInput":`+rewritten),
			result: "R-ask", isError: true, denied: rewritten},
		// defer in -p: the run stops before the tool, with no tool_result.
		{name: "defer/bypass", mode: "bypassPermissions", hook: decision("defer", ""), terminal: "tool_deferred"},
		// The settings' deny rules are matched against the rewritten
		// command, not the original, even after the hook's allow.
		{name: "deny-rule-on-original/bypass", mode: "bypassPermissions", hook: decision("allow", `,"updatedInput":`+rewritten),
			permissions: map[string]any{"deny": []string{"Bash(echo original:*)"}}, ran: "rewritten", result: "(Bash completed with no output)"},
		{name: "deny-rule-on-rewritten/bypass", mode: "bypassPermissions", hook: decision("allow", `,"updatedInput":`+rewritten),
			permissions: map[string]any{"deny": []string{"Bash(echo rewritten:*)"}}, result: "has been denied", isError: true, denied: rewritten},
		// A hook that fails (exit 1, output that is not JSON, killed at its
		// timeout) fails open: the original command runs. Only exit 2 or a
		// deny blocks.
		{name: "hook-exit-1/bypass", mode: "bypassPermissions", exit: 1, ran: "original", result: "(Bash completed with no output)"},
		{name: "hook-not-json/bypass", mode: "bypassPermissions", hook: `{"hookSpecificOutput":`, ran: "original", result: "(Bash completed with no output)"},
		{name: "hook-timeout/bypass", mode: "bypassPermissions", slow: true, hook: decision("deny", `,"permissionDecisionReason":"R-late"`),
			ran: "original", result: "(Bash completed with no output)"},
		{name: "hook-exit-2/bypass", mode: "bypassPermissions", exit: 2, result: "R-stderr", isError: true, denied: `{"command":"echo original > ran.txt","description":"d"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			hook := filepath.Join(t.TempDir(), "hook.sh")
			// Only the slow case may meet the hook's timeout: on a loaded
			// machine a shell script can take more than a second to start,
			// and a hook past its timeout fails open, which every other case
			// would then misreport.
			wait, timeout := "", 60
			if tc.slow {
				wait, timeout = "sleep 5\n", 1
			}
			script := "#!/bin/sh\ncat >/dev/null\n" + wait + "cat <<'JSON'\n" + tc.hook + "\nJSON\necho R-stderr >&2\nexit " + strconv.Itoa(tc.exit) + "\n"
			if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			settings := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash",
				"hooks": []any{map[string]any{"type": "command", "command": hook, "timeout": timeout}}}}}}
			if tc.permissions != nil {
				settings["permissions"] = tc.permissions
			}
			sj, _ := json.Marshal(settings)
			m := claudecli.NewModel(t, claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_bash", Name: "Bash",
				Input: map[string]any{"command": "echo original > ran.txt", "description": "d"}}}})
			res := claudecli.Run(t, m, claudecli.RunOptions{Dir: dir, Settings: sj, PermissionMode: tc.mode})
			if res.ExitCode != 0 {
				t.Fatalf("claude: %s", res)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "ran.txt"))
			if strings.TrimSpace(string(got)) != tc.ran {
				t.Errorf("ran.txt = %q, want %q", got, tc.ran)
			}
			final := res.Final()
			if tc.terminal != "" {
				if final["terminal_reason"] != tc.terminal || len(m.ToolResults()) != 0 {
					t.Errorf("terminal_reason %v with tool results %+v, want %s and none", final["terminal_reason"], m.ToolResults(), tc.terminal)
				}
				return
			}
			tr := m.ToolResult(t, "toolu_bash")
			if tr.IsError != tc.isError || !strings.Contains(tr.Text, tc.result) {
				t.Errorf("tool_result %+v, want is_error=%v containing %q", tr, tc.isError, tc.result)
			}
			denials, _ := final["permission_denials"].([]any)
			switch {
			case tc.denied == "" && len(denials) != 0:
				t.Errorf("permission_denials %v, want none", denials)
			case tc.denied != "":
				var want any
				_ = json.Unmarshal([]byte(tc.denied), &want)
				got, _ := json.Marshal(denials)
				wantJSON, _ := json.Marshal([]any{map[string]any{"tool_name": "Bash", "tool_use_id": "toolu_bash", "tool_input": want}})
				if string(got) != string(wantJSON) {
					t.Errorf("permission_denials %s, want %s", got, wantJSON)
				}
			}
		})
	}
}
