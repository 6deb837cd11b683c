package e2e

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// rulesPolicy is the embedded policy plus rules for both doors: one rule
// for toolhost's bash and Claude CLI's Bash, a confirm rule on a tool's
// argument, an allow rule that lifts a tool's confirm, and a confirm rule
// on the CLI's Write.
const rulesPolicy = `{"tools":{"timeline_append":{"confirm":true}},"rules":[
 {"id":"no-force-push","tool":"{bash,Bash}","effect":"deny","reason":"force-push is not allowed; push a new branch",
  "when":"cmd.commands.exists(c, c.name == 'git' && c.args.size() > 0 && c.args[0] == 'push' && c.args.exists(a, a == '--force' || a == '-f'))"},
 {"id":"secret-memory","tool":"record_memory","when":"args.key.startsWith('secret')","effect":"confirm","reason":"secrets are kept only with a human's consent"},
 {"id":"notes-need-no-human","tool":"timeline_append","when":"args.kind == 'note'","effect":"allow"},
 {"id":"package-json","tool":"Write","when":"glob(args.file_path, 'units/*/package.json')","effect":"confirm","reason":"dependencies change only with a human"},
 {"id":"ask-remote","tool":"Bash","when":"cmd.hosts.exists(h, h != '127.0.0.1')","effect":"confirm","reason":"the command talks to another host"}
]}`

func callTool(t *testing.T, c *stdioclient.Client, name string, args any) *stdioclient.ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.CallTool(ctx, name, args, nil)
	if err != nil {
		t.Fatalf("%s: %v\nstderr: %s", name, err, c.Stderr())
	}
	return r
}

// auditRules returns, per call, the tool, status and rule of the
// project's audit rows, as `toolhost audit --json` prints them.
func auditRules(t *testing.T, bin, project string) []string {
	t.Helper()
	out, err := exec.Command(bin, "audit", "--json", "--project-dir", project).Output()
	if err != nil {
		t.Fatalf("toolhost audit: %v", err)
	}
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct{ Tool, Status, ErrorKind, Rule string }
		if err := json.Unmarshal([]byte(line), &struct {
			Tool      *string `json:"tool"`
			Status    *string `json:"status"`
			ErrorKind *string `json:"error_kind"`
			Rule      *string `json:"rule"`
		}{&r.Tool, &r.Status, &r.ErrorKind, &r.Rule}); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		rows = append(rows, strings.TrimRight(r.Tool+" "+r.Status+" "+r.ErrorKind+" "+r.Rule, " "))
	}
	return rows
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestRulesThroughTheBinary: a deny rule refuses with its reason and
// nothing runs, whatever the command hides; a confirm rule asks through
// elicitation and through needs_confirmation + toolhost approve; an allow
// rule lets a confirm tool run unasked; every decision's audit row names
// its rule.
func TestRulesThroughTheBinary(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	pol := policyFile(t, rulesPolicy)

	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		project := t.TempDir()
		c := start(t, bin, "--agent", "devloop-coder", "--project-dir", project, "--policy", pol)
		for _, tc := range []struct{ command, want string }{
			{"touch ran.txt && git push --force origin main", "bash refused by policy rule no-force-push: force-push is not allowed; push a new branch"},
			{"touch ran.txt; $(echo git) push -f", "refused by policy rule no-force-push"},
			{"touch ran.txt; \\git push origin main --force", "refused by policy rule no-force-push"},
			{"touch ran.txt; g=git; command env $g push --force", "refused by policy rule no-force-push"},
			{`touch ran.txt; "$GIT_BIN" push --force`, "the rule may match and toolhost cannot tell: the program's name is computed when the command runs"},
		} {
			r := callTool(t, c, "bash", map[string]any{"command": tc.command})
			if !r.IsError || !strings.Contains(r.Text(), tc.want) {
				t.Errorf("%s: %+v, want a refusal with %q", tc.command, r, tc.want)
			}
		}
		_ = filepath.WalkDir(project, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "ran.txt" {
				t.Errorf("a refused command ran: %s exists", p)
			}
			return nil
		})
		for _, row := range auditRules(t, bin, project) {
			if row != "bash rejected policy no-force-push" {
				t.Errorf("audit row %q, want bash rejected policy no-force-push", row)
			}
		}
	})

	t.Run("confirm by elicitation", func(t *testing.T) {
		t.Parallel()
		project := t.TempDir()
		c := start(t, bin, "--agent", "devloop-coder", "--project-dir", project, "--policy", pol)
		var mu sync.Mutex
		var asked []string
		answer := "accept"
		c.OnRequest(func(method string, params json.RawMessage) (any, *stdioclient.RPCError) {
			if method != "elicitation/create" {
				return nil, &stdioclient.RPCError{Code: -32601, Message: method}
			}
			var p struct{ Message string }
			_ = json.Unmarshal(params, &p)
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, p.Message)
			return map[string]any{"action": answer, "content": map[string]any{"confirm": true}}, nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.Initialize(ctx, "2025-11-25", map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}); err != nil {
			t.Fatal(err)
		}
		mem := filepath.Join(project, "memory", "devloop", "coder")
		if r := callTool(t, c, "record_memory", map[string]any{"key": "secret-token", "content": "kept"}); r.IsError || !exists(filepath.Join(mem, "secret-token.md")) {
			t.Fatalf("accepted: %+v", r)
		}
		if len(asked) != 1 || !strings.Contains(asked[0], "policy rule secret-memory asks for a human's confirmation: secrets are kept only with a human's consent") {
			t.Fatalf("the human was asked %q", asked)
		}
		answer = "decline"
		if r := callTool(t, c, "record_memory", map[string]any{"key": "secret-other", "content": "x"}); !r.IsError || !strings.Contains(r.Text(), "declined by user") || exists(filepath.Join(mem, "secret-other.md")) {
			t.Fatalf("declined: %+v", r)
		}
		// No rule matches: the tool's entry (no confirm) decides.
		if r := callTool(t, c, "record_memory", map[string]any{"key": "plain", "content": "x"}); r.IsError || len(asked) != 2 {
			t.Fatalf("plain key: %+v, asked %d times", r, len(asked))
		}
		// The allow rule lifts timeline_append's confirm for notes only.
		if r := callTool(t, c, "timeline_append", map[string]any{"kind": "note", "message": "m"}); r.IsError || len(asked) != 2 {
			t.Fatalf("note: %+v, asked %d times", r, len(asked))
		}
		answer = "accept"
		if r := callTool(t, c, "timeline_append", map[string]any{"kind": "decision", "message": "m"}); r.IsError || len(asked) != 3 || strings.Contains(asked[2], "policy rule") {
			t.Fatalf("decision: %+v, asked %q", r, asked)
		}
		want := []string{"record_memory ok  secret-memory", "record_memory rejected user_declined secret-memory", "record_memory ok",
			"timeline_append ok  notes-need-no-human", "timeline_append ok"}
		if got := auditRules(t, bin, project); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("audit rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("confirm by toolhost approve", func(t *testing.T) {
		t.Parallel()
		project := t.TempDir()
		c := start(t, bin, "--agent", "devloop-coder", "--project-dir", project, "--policy", pol)
		args := map[string]any{"key": "secret-plan", "content": "the plan"}
		r := callTool(t, c, "record_memory", args)
		id := regexp.MustCompile(`toolhost approve (cf-[0-9A-Z]+)`).FindStringSubmatch(r.Text())
		if !r.IsError || id == nil || !strings.Contains(r.Text(), "needs_confirmation: policy rule secret-memory asks for a human's confirmation") {
			t.Fatalf("first call: %+v", r)
		}
		file := filepath.Join(project, "memory", "devloop", "coder", "secret-plan.md")
		if exists(file) {
			t.Fatal("the call ran before a human approved it")
		}
		if out, err := exec.Command(bin, "approve", id[1], "--project-dir", project).CombinedOutput(); err != nil {
			t.Fatalf("approve: %v: %s", err, out)
		}
		if r := callTool(t, c, "record_memory", args); r.IsError || !exists(file) {
			t.Fatalf("after approve: %+v", r)
		}
		want := []string{"record_memory rejected needs_confirmation secret-memory", "record_memory ok  secret-memory"}
		if got := auditRules(t, bin, project); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("audit rows %q, want %q", got, want)
		}
	})
}

// TestBrokenRuleKeepsTheLastGoodPolicy edits the policy file of a running
// serve: a rule that does not compile is refused (logged with its id and
// position), the last good rules stay in force, and a good edit replaces
// them.
func TestBrokenRuleKeepsTheLastGoodPolicy(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	pol := filepath.Join(t.TempDir(), "tools.json")
	step := 0
	put := func(rules string) {
		t.Helper()
		step++
		if err := os.WriteFile(pol, []byte(`{"tools":{},"rules":`+rules+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		// A distinct mtime per edit: the reload does not depend on the
		// file system's timestamp resolution.
		mt := time.Date(2026, 1, 1, 0, 0, step, 0, time.UTC)
		if err := os.Chtimes(pol, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	put(`[{"id":"blocked-key","tool":"record_memory","when":"args.key == 'blocked'","effect":"deny","reason":"that key is reserved"}]`)
	c := start(t, bin, "--agent", "devloop-coder", "--project-dir", project, "--policy", pol)
	file := filepath.Join(project, "memory", "devloop", "coder", "blocked.md")
	refused := func() bool {
		r := callTool(t, c, "record_memory", map[string]any{"key": "blocked", "content": "x"})
		return r.IsError && strings.Contains(r.Text(), "refused by policy rule blocked-key: that key is reserved")
	}
	if !refused() {
		t.Fatal("the deny rule did not refuse")
	}
	broken := `[{"id":"blocked-key","tool":"record_memory","when":"args.kee == 'blocked'","effect":"deny","reason":"that key is reserved"}]`
	put(broken)
	if !refused() || exists(file) {
		t.Fatal("a broken rule replaced the last good policy")
	}
	// The log arrives through a pipe of its own, maybe after the answer.
	want := `rules[0] (id \"blocked-key\"): when 1:5: undefined field 'kee'`
	logged := func() bool {
		log := c.Stderr()
		return strings.Contains(log, `"event":"tool_policy_invalid"`) && strings.Contains(log, want)
	}
	for deadline := time.Now().Add(10 * time.Second); !logged() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !logged() {
		t.Fatalf("the log does not name the broken rule (%s):\n%s", want, c.Stderr())
	}
	out, err := exec.Command(bin, "policy", "check", pol).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), `rules[0] (id "blocked-key"): when 1:5: undefined field 'kee'`) {
		t.Fatalf("policy check: %v\n%s", err, out)
	}
	put(`[]`)
	if r := callTool(t, c, "record_memory", map[string]any{"key": "blocked", "content": "x"}); r.IsError || !exists(file) {
		t.Fatalf("after the rule was removed: %+v", r)
	}
}

// TestHookAppliesTheRules feeds Claude CLI PreToolUse payloads to `toolhost
// hook pretooluse` with the same policy file serve uses: the bash rule
// denies the CLI's Bash too, a confirm rule on Write answers ask, and a
// confirm rule on Bash answers ask with the confined command.
func TestHookAppliesTheRules(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	pol := policyFile(t, rulesPolicy)
	project := t.TempDir()
	hook := func(tool string, input map[string]any) (decision, reason string, updated map[string]any) {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": project, "hook_event_name": "PreToolUse",
			"tool_name": tool, "tool_input": input})
		cmd := exec.Command(bin, "hook", "pretooluse", "--agent", "devloop-coder", "--project-dir", project, "--policy", pol)
		cmd.Stdin = strings.NewReader(string(payload))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hook: %v", err)
		}
		if len(strings.TrimSpace(string(out))) == 0 {
			return "", "", nil
		}
		var a struct {
			HookSpecificOutput struct {
				PermissionDecision       string         `json:"permissionDecision"`
				PermissionDecisionReason string         `json:"permissionDecisionReason"`
				UpdatedInput             map[string]any `json:"updatedInput"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("hook output %s: %v", out, err)
		}
		h := a.HookSpecificOutput
		return h.PermissionDecision, h.PermissionDecisionReason, h.UpdatedInput
	}
	if d, r, _ := hook("Bash", map[string]any{"command": "git push --force origin main", "description": "push"}); d != "deny" ||
		!strings.Contains(r, "Bash refused by policy rule no-force-push: force-push is not allowed; push a new branch") {
		t.Errorf("Bash force push: %s %q", d, r)
	}
	if d, r, _ := hook("Bash", map[string]any{"command": "env git push -f"}); d != "deny" || !strings.Contains(r, "no-force-push") {
		t.Errorf("Bash hidden force push: %s %q", d, r)
	}
	d, r, up := hook("Bash", map[string]any{"command": "curl -s https://example.com/x -o x.json", "description": "fetch"})
	if cmd, _ := up["command"].(string); d != "ask" || !strings.Contains(r, "policy rule ask-remote asks") || !strings.Contains(cmd, "confine --hold ") || up["description"] != "fetch" {
		t.Errorf("Bash to another host: %s %q %v", d, r, up)
	}
	pkg := filepath.Join(project, "units", "todo-be", "package.json")
	if d, r, _ := hook("Write", map[string]any{"file_path": pkg, "content": "{}"}); d != "ask" || !strings.Contains(r, "policy rule package-json asks for a human's confirmation: dependencies change only with a human") {
		t.Errorf("Write package.json: %s %q", d, r)
	}
	// No rule: the hook does not object, the CLI's own check decides.
	if d, r, _ := hook("Write", map[string]any{"file_path": filepath.Join(project, "units", "todo-be", "src", "a.ts"), "content": "x"}); d != "" {
		t.Errorf("Write a.ts: %s %q", d, r)
	}
	// The sandbox still refuses what a confirm rule would ask about.
	if d, r, _ := hook("Write", map[string]any{"file_path": filepath.Join(project, "contracts", "package.json"), "content": "x"}); d != "deny" || !strings.Contains(r, "Sandbox violation") {
		t.Errorf("Write outside the allow-list: %s %q", d, r)
	}
	// A policy whose rules do not compile denies every call.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"tools":{},"rules":[{"id":"x","tool":"Bash","when":"cmd.progams.size() > 0","effect":"deny","reason":"r"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pol = bad
	if d, r, _ := hook("Write", map[string]any{"file_path": filepath.Join(project, "units", "todo-be", "a.ts"), "content": "x"}); d != "deny" || !strings.Contains(r, "undefined field 'progams'") {
		t.Errorf("broken policy: %s %q", d, r)
	}
}
