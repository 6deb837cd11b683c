package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const explainPolicy = `{"tools":{"timeline_append":{"permission":"write","confirm":true},"bash":{"permission":"write"},"record_memory":{"permission":"write"}},"rules":[
 {"id":"no-force-push","tool":"{bash,Bash}","when":"cmd.programs.exists(p, p == 'git') && cmd.args.exists(a, a == '--force')","effect":"deny","reason":"push a new branch"},
 {"id":"long","tool":"bash","when":"args.timeout_ms > 300000","effect":"confirm","reason":"long commands need a human"},
 {"id":"notes","tool":"timeline_append","when":"args.kind == 'note'","effect":"allow"},
 {"id":"fetch","tool":"WebFetch","when":"!args.url.startsWith('https://docs.example.com/')","effect":"deny","reason":"only the docs site"}
]}`

func TestPolicyCheckRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.json", explainPolicy)
	next := writeFile(t, dir, "next.json", `{"tools":{},"rules":[
 {"id":"notes","tool":"timeline_append","when":"args.kind == 'note'","effect":"allow"},
 {"id":"no-force-push","tool":"{bash,Bash}","when":"cmd.programs.exists(p, p == 'git')","effect":"deny","reason":"push a new branch"},
 {"id":"typo","tool":"bsah","effect":"allow"}]}`)
	bad := writeFile(t, dir, "bad.json", `{"tools":{},"rules":[
 {"id":"ok","tool":"bash","effect":"allow"},
 {"id":"b1","tool":"bash","when":"args.command.size() > 'x'","effect":"deny","reason":"r"},
 {"id":"b2","tool":"Write","when":"cmd.programs.size() > 0","effect":"deny","reason":"r"},
 {"id":"b3","tool":"bash","effect":"block"}]}`)

	out, _, code := run("policy", "check", good)
	if code != 0 || !strings.Contains(out, "4 rules") || !strings.Contains(out, "+ rule no-force-push: deny {bash,Bash} when cmd.programs") {
		t.Fatalf("good: exit %d\n%s", code, out)
	}
	out, _, code = run("policy", "check", next, "--against", good)
	for _, w := range []string{
		"- rule long: was confirm bash when args.timeout_ms > 300000",
		"~ rule no-force-push: when cmd.programs.exists(p, p == 'git') && cmd.args.exists(a, a == '--force') → cmd.programs.exists(p, p == 'git')",
		"+ rule typo: allow bsah when (always)",
		"~ setting rules order: no-force-push, notes → notes, no-force-push (the first matching rule decides)",
		"! rule typo: tool bsah is neither a toolhost nor a Claude CLI built-in",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("next: lacks %q:\n%s", w, out)
		}
	}
	if code != 0 {
		t.Errorf("next: exit %d", code)
	}
	_, errOut, code := run("policy", "check", bad)
	for _, w := range []string{
		"bad.json is invalid: 3 rule problems",
		`rules[1] (id "b1"): when 1:21: found no matching overload for '_>_' applied to '(int, string)'`,
		`rules[2] (id "b2"): when 1:1: tool Write runs no command, so it has no cmd`,
		`rules[3] (id "b3"): effect "block" must be deny, confirm or allow`,
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("bad: stderr lacks %q:\n%s", w, errOut)
		}
	}
	if code != 2 {
		t.Errorf("bad: exit %d, want 2", code)
	}
	out, _, code = run("policy", "check", bad, "--json")
	if code != 2 || strings.Count(out, "\n") != 3 || !strings.Contains(out, `{"index":1,"id":"b1","line":1,"col":21,"error":`) {
		t.Errorf("bad --json: exit %d\n%s", code, out)
	}
}

func TestPolicyExplain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := writeFile(t, dir, "p.json", explainPolicy)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"deny, sure", []string{"--tool", "bash", "--args", `{"command":"git push --force"}`}, []string{
			`"programs":["git"]`, "→ rules[0] no-force-push: true", "decision: bash refused by policy rule no-force-push: push a new branch"}},
		{"deny, unsure", []string{"--tool", "bash", "--args", `{"command":"git push $F"}`}, []string{
			"→ rules[0] no-force-push: unknown — part of an argument of git is only known when the command runs",
			"the rule may match and toolhost cannot tell"}},
		{"confirm", []string{"--tool", "bash", "--args", `{"command":"make","timeout_ms":400000}`}, []string{
			"  rules[0] no-force-push: false", "→ rules[1] long: true", "decision: a human must confirm it: policy rule long asks"}},
		{"no rule, the guard refuses", []string{"--tool", "bash", "--args", `{"command":"curl -d '{\"a\":1}' http://x"}`}, []string{
			"decision: no rule decides: it runs as the tool's policy entry says; then the Bash guard refuses the command: Bash guard: blocked inline JSON"}},
		{"allow lifts the entry's confirm", []string{"--tool", "timeline_append", "--args", `{"kind":"note","message":"m"}`}, []string{
			"decision: rule notes allows it without a human's confirmation"}},
		{"the entry's confirm", []string{"--tool", "timeline_append", "--args", `{"kind":"x","message":"m"}`}, []string{
			"decision: no rule decides: the tool's policy entry says confirm"}},
		{"invalid arguments", []string{"--tool", "bash", "--args", `{"cmd":"ls"}`}, []string{
			"decision: refused before the rules run: the arguments are not valid"}},
		{"not the agent's tool", []string{"--tool", "bash", "--agent", "pm", "--args", `{"command":"ls"}`}, []string{
			"decision: refused before the rules run: tool bash is not allowed for agent devloop-pm"}},
		{"a Claude CLI tool", []string{"--tool", "WebFetch", "--args", `{"url":"https://evil.example/x","prompt":"p"}`}, []string{
			"(a Claude CLI built-in, decided by the hook)", "decision: WebFetch refused by policy rule fetch: only the docs site"}},
		{"the CLI's Bash", []string{"--tool", "Bash", "--args", `{"command":"ls"}`}, []string{
			"no rule decides: the hook does not object, and the CLI's own permission check decides"}},
		{"no rule names the tool", []string{"--tool", "record_memory", "--args", `{"key":"k","content":"c"}`}, []string{
			"no rule of the policy applies to this tool"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"policy", "explain", "--policy", pol, "--agent", "coder"}, tc.args...)
			out, errOut, code := run(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
		})
	}
	out, _, _ := run("policy", "explain", "--policy", pol, "--agent", "coder", "--tool", "bash", "--args", `{"command":"$X"}`, "--json")
	var x struct {
		Verdict struct{ Rule, Effect, Unsure string }
		Steps   []struct{ Result string }
	}
	if err := json.Unmarshal([]byte(out), &x); err != nil || x.Verdict.Rule != "no-force-push" || x.Verdict.Unsure == "" || x.Steps[0].Result != "unknown" {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if _, errOut, code := run("policy", "explain", "--policy", pol, "--agent", "coder", "--tool", "bash", "--args", `{`); code != 2 || !strings.Contains(errOut, "--args is not valid JSON") {
		t.Errorf("bad --args: exit %d %s", code, errOut)
	}
}

func TestSettingsHookTheToolsRulesName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := writeFile(t, dir, "p.json", explainPolicy)
	matcher := func(extra ...string) (string, string) {
		out, errOut, code := run(append([]string{"mcp-config", "--agent", "devloop-coder", "--project-dir", dir, "--settings"}, extra...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var s struct {
			Hooks struct {
				PreToolUse []struct {
					Matcher string
					Hooks   []struct{ Command string }
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		return s.Hooks.PreToolUse[0].Matcher, s.Hooks.PreToolUse[0].Hooks[0].Command
	}
	if m, cmd := matcher(); m != "Bash|Write|Edit|MultiEdit|NotebookEdit" || strings.Contains(cmd, "--policy") {
		t.Errorf("default: %q %q", m, cmd)
	}
	if m, cmd := matcher("--policy", pol, "--unit", "todo-be"); m != "Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch" ||
		!strings.Contains(cmd, "--policy "+pol) || !strings.Contains(cmd, "--unit todo-be") {
		t.Errorf("with rules: %q %q", m, cmd)
	}
}
