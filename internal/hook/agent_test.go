package hook_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// agentPayload is a PreToolUse payload of a call made by agentType (""
// for the main thread), inside a subagent when agentID is set.
func agentPayload(cwd, tool string, input map[string]any, agentType, agentID, toolUseID string) string {
	m := map[string]any{"session_id": "sess-claude-1", "cwd": cwd, "hook_event_name": "PreToolUse",
		"tool_name": tool, "tool_input": input, "tool_use_id": toolUseID}
	if agentType != "" {
		m["agent_type"] = agentType
	}
	if agentID != "" {
		m["agent_id"] = agentID
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// decision reads the hook's answer: "deny: reason", "rewrite", or "" for
// no answer.
func decision(t *testing.T, stdout string) string {
	t.Helper()
	if strings.TrimSpace(stdout) == "" {
		return ""
	}
	var out struct {
		HookSpecificOutput struct {
			PermissionDecision       string          `json:"permissionDecision"`
			PermissionDecisionReason string          `json:"permissionDecisionReason"`
			UpdatedInput             json.RawMessage `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("hook output %q: %v", stdout, err)
	}
	h := out.HookSpecificOutput
	switch {
	case h.PermissionDecision != "":
		return h.PermissionDecision + ": " + h.PermissionDecisionReason
	case h.UpdatedInput != nil:
		return "rewrite"
	}
	return "?"
}

// TestHookAgentFromPayload: the agent a call is checked as comes from the
// payload's agent_type. An agent's own hook (--agent) denies a call another
// devloop agent makes; the project's hook (no --agent) checks each devloop
// agent's call as that agent, the main thread as the --lead agent, and
// without a lead decides nothing (no output) but says so in its log; an
// agent_type that is no devloop agent (a built-in subagent) is the main
// thread's.
func TestHookAgentFromPayload(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	prd := filepath.Join(proj, "prd/index.html")
	write := map[string]any{"file_path": prd, "content": "x"}
	cases := []struct {
		name      string
		flags     []string
		agentType string
		want      string // prefix of the decision; "" no answer
		log       string
	}{
		{"own hook, own agent", []string{"--agent", "devloop-pm"}, "devloop-pm", "", "pretooluse allow"},
		{"own hook, another devloop agent", []string{"--agent", "devloop-pm"}, "devloop-coder", "deny: toolhost hook: this hook is installed for devloop-pm (--agent), but the call is made by devloop-coder (agent_type)", ""},
		{"own hook, a built-in subagent", []string{"--agent", "devloop-coder"}, "Explore", "deny: Sandbox violation: devloop-coder tried to write prd/index.html", ""},
		{"project hook, the PM", nil, "devloop-pm", "", "pretooluse allow"},
		{"project hook, the coder", nil, "devloop-coder", "deny: Sandbox violation: devloop-coder tried to write prd/index.html", ""},
		{"project hook, main thread, no lead", nil, "", "", "no devloop agent makes this call and no --lead agent is named"},
		{"project hook, built-in subagent, no lead", nil, "general-purpose", "", "toolhost decides nothing"},
		{"project hook, main thread, lead", []string{"--lead", "coder"}, "", "deny: Sandbox violation: devloop-coder tried to write prd/index.html", ""},
		{"project hook, unknown lead", []string{"--lead", "nobody"}, "", "deny: toolhost hook: --lead: unknown agent", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"hook", "pretooluse", "--project-dir", proj}, tc.flags...)
			stdout, stderr, code := testutil.Run(t, agentPayload(proj, "Write", write, tc.agentType, "a1", "toolu_"+strings.ReplaceAll(tc.name, " ", "_")), nil, args...)
			got := decision(t, stdout)
			if code != 0 || !strings.HasPrefix(got, tc.want) || (tc.want == "" && got != "") {
				t.Fatalf("exit %d, decision %q; want %q (stderr %s)", code, got, tc.want, stderr)
			}
			if !strings.Contains(stderr, tc.log) || !strings.Contains(stderr, `"agent_type":"`+tc.agentType+`"`) {
				t.Errorf("log %s lacks %q and the agent_type", stderr, tc.log)
			}
		})
	}
}

// TestHookAuditsOnce: a hook's decision is a row of the project's audit
// trail with the CLI's session, the subagent's agent_id and the tool_use
// id; when the agent's own hook and the project's both decide the same
// call, the trail has one row of it.
func TestHookAuditsOnce(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proj, "units/u1"), 0o755); err != nil {
		t.Fatal(err)
	}
	deny := agentPayload(proj, "Write", map[string]any{"file_path": filepath.Join(proj, "prd/x.html"), "content": "x"}, "devloop-coder", "agent-7", "toolu_deny")
	allow := agentPayload(proj, "Bash", map[string]any{"command": "echo hi"}, "devloop-coder", "agent-7", "toolu_bash")
	for _, p := range []string{deny, allow} {
		for _, flags := range [][]string{{"--agent", "devloop-coder"}, nil} {
			if _, stderr, code := testutil.Run(t, p, nil, append([]string{"hook", "pretooluse", "--project-dir", proj}, flags...)...); code != 0 {
				t.Fatalf("hook: exit %d: %s", code, stderr)
			}
		}
	}
	f, err := os.Open(filepath.Join(proj, ".toolhost/audit.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]map[string]any{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if id, ok := r["tool_use_id"].(string); ok {
			rows[id] = append(rows[id], r)
		}
	}
	for id, want := range map[string]map[string]any{
		"toolu_deny": {"tool": "Write", "status": "rejected", "error_kind": "sandbox"},
		"toolu_bash": {"tool": "Bash", "status": "ok"},
	} {
		got := rows[id]
		if len(got) != 1 {
			t.Fatalf("%s: %d rows, want 1: %v", id, len(got), got)
		}
		r := got[0]
		for k, v := range want {
			if r[k] != v {
				t.Errorf("%s: %s = %v, want %v (%v)", id, k, r[k], v, r)
			}
		}
		if r["source"] != "hook" || r["agent"] != "coder" || r["client_session_id"] != "sess-claude-1" || r["client_agent_id"] != "agent-7" {
			t.Errorf("%s: row %v lacks the hook's source, the agent and the CLI's ids", id, r)
		}
	}
}
