package hook

import (
	"testing"

	"github.com/toolhost/toolhost/internal/bashguard"
)

func analyze(t *testing.T, command string) *bashguard.Analysis {
	t.Helper()
	a, err := bashguard.Analyze(command)
	if err != nil {
		t.Fatalf("%q: %v", command, err)
	}
	return a
}

// TestBashRuleMatcher: the settings' Bash rule forms match as the Claude
// CLI documents them.
func TestBashRuleMatcher(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule    string
		command string
		want    bool
	}{
		{"Bash", "anything at all", true},
		{"Bash(*)", "rm -rf x", true},
		{"Bash(curl:*)", "curl", true},
		{"Bash(curl:*)", "curl -s http://x", true},
		{"Bash(curl:*)", "curlie http://x", false},
		{"Bash(git push:*)", "git push --force", true},
		{"Bash(git push:*)", "git pull", false},
		{"Bash(npm test)", "npm test", true},
		{"Bash(npm test)", "npm test --watch", false},
		{"Bash(ls *)", "ls", true},
		{"Bash(ls *)", "ls -la", true},
		{"Bash(ls *)", "lsof", false},
		{"Bash(ls*)", "lsof", true},
		{"Bash(git * main)", "git push origin main", true},
		{"Bash(git * main)", "git push origin dev", false},
		{"Bash(* install)", "npm install", true},
		{"Bash(a.b*)", "aXb", false},
	} {
		m, ok := bashRuleMatcher(tc.rule)
		if !ok {
			t.Fatalf("%s: not read as a Bash rule", tc.rule)
		}
		if got := m(tc.command); got != tc.want {
			t.Errorf("%s on %q = %v, want %v", tc.rule, tc.command, got, tc.want)
		}
	}
	for _, other := range []string{"Read(.env)", "WebFetch(domain:x)", "Bashful", "mcp__toolhost__bash", "Bash(unclosed"} {
		if _, ok := bashRuleMatcher(other); ok {
			t.Errorf("%s read as a Bash rule", other)
		}
	}
}

// TestClaudePermissionsReachInnerCommands: a rule is matched against each
// simple command the guard's analysis finds, not only the text's start.
func TestClaudePermissionsReachInnerCommands(t *testing.T) {
	t.Parallel()
	m, _ := bashRuleMatcher("Bash(curl:*)")
	p := claudePermissions{deny: []claudeRule{{text: "Bash(curl:*)", file: "f", match: m}}}
	for _, command := range []string{
		"curl http://x",
		"echo a && curl http://x",
		"true; /usr/bin/curl http://x",
		`\curl http://x`,
		"env curl http://x",
		"timeout 5 curl http://x",
		`bash -c 'curl http://x'`,
		"ls | xargs curl",
	} {
		if v := p.bash(command, analyze(t, command)); v.deny == "" || v.rule != "claude:Bash(curl:*)" {
			t.Errorf("%q: %+v, want denied by Bash(curl:*)", command, v)
		}
	}
	for _, command := range []string{"echo curl", "ls -la", "curlie x"} {
		if v := p.bash(command, analyze(t, command)); v.deny != "" || v.ask != "" {
			t.Errorf("%q: %+v, want no rule", command, v)
		}
	}
}
