package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSettings writes a Claude CLI settings file with permission rules.
func writeSettings(t *testing.T, path string, perms map[string][]string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"permissions": perms})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHookAppliesClaudeSettingsToTheCommandAsWritten: the rewrite to
// `toolhost confine` hides the command from the CLI's own settings rules,
// so the hook applies their Bash deny and ask rules to the command as
// written — from the project's shared and local settings and from a file
// named with --claude-settings — and denies when a settings file cannot be
// read. A command no rule names is rewritten as before.
func TestHookAppliesClaudeSettingsToTheCommandAsWritten(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	writeSettings(t, filepath.Join(proj, ".claude/settings.json"), map[string][]string{
		"deny": {"Bash(curl:*)", "Read(.env)"}, "ask": {"Bash(rm *)"}})
	writeSettings(t, filepath.Join(proj, ".claude/settings.local.json"), map[string][]string{"deny": {"Bash(git push:*)"}})
	named := filepath.Join(t.TempDir(), "cli-settings.json")
	writeSettings(t, named, map[string][]string{"deny": {"Bash(wget *)"}})
	for _, tc := range []struct {
		command string
		extra   []string
		want    string // "" rewritten; otherwise the start of the answer and a part of its reason
		rule    string
	}{
		{command: "echo hello"},
		{command: "curl -s http://127.0.0.1:9/x", want: "deny: ", rule: "Bash(curl:*)"},
		{command: "echo a && env curl http://127.0.0.1:9/x", want: "deny: ", rule: "Bash(curl:*)"},
		{command: "git push --force origin main", want: "deny: ", rule: "Bash(git push:*)"},
		{command: "rm -rf units", want: "ask: ", rule: "Bash(rm *)"},
		{command: "wget http://127.0.0.1:9/x"},
		{command: "wget http://127.0.0.1:9/x", extra: []string{"--claude-settings", named}, want: "deny: ", rule: "Bash(wget *)"},
		{command: "echo hello", extra: []string{"--claude-settings", named + ".missing"}, want: "deny: ", rule: "cannot read the Claude CLI settings"},
	} {
		updated, refused := rewriteBash(t, proj, map[string]any{"command": tc.command}, tc.extra...)
		if tc.want == "" {
			if refused != "" || updated == nil {
				t.Errorf("%q %v: %q, want it rewritten to run confined", tc.command, tc.extra, refused)
			}
			continue
		}
		if !strings.HasPrefix(refused, tc.want) || !strings.Contains(refused, tc.rule) {
			t.Errorf("%q %v: %q, want %q naming %s", tc.command, tc.extra, refused, tc.want, tc.rule)
		}
	}

	broken := t.TempDir()
	if err := os.MkdirAll(filepath.Join(broken, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, ".claude/settings.json"), []byte(`{"permissions":{"deny":"Bash(curl:*)"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, refused := rewriteBash(t, broken, map[string]any{"command": "echo hello"}); !strings.HasPrefix(refused, "deny: ") || !strings.Contains(refused, "are not valid") {
		t.Errorf("settings whose deny is not a list: %q, want denied naming the file", refused)
	}
}
