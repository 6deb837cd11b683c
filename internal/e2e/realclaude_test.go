package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/claudecli"
)

// TestRealClaudeMCPTool runs the real Claude CLI with toolhost as its MCP
// server, configured exactly as `toolhost mcp-config` prints it, and has the
// scripted model call timeline_append: the entry is on disk, and the
// tool_result the CLI sent back to the model carries toolhost's result.
func TestRealClaudeMCPTool(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	cfg, tap := claudecli.TapMCP(t, run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project))
	allowed := allowedTools(t, bin, "devloop-coder", project)
	m := claudecli.NewModel(t, claudecli.Turn{
		Text: "recording progress",
		ToolUses: []claudecli.ToolUse{{ID: "toolu_timeline", Name: "mcp__toolhost__timeline_append",
			Input: map[string]any{"kind": "cli.check", "message": "appended through the real Claude CLI"}}},
	})
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, MCPConfig: cfg, AllowedTools: allowed})
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}

	entries := timeline(t, project)
	if len(entries) != 1 || entries[0]["kind"] != "cli.check" || entries[0]["message"] != "appended through the real Claude CLI" ||
		entries[0]["agent"] != "coder" {
		t.Fatalf("timeline.ndjson = %v, want the one entry the model asked for", entries)
	}
	tr := m.ToolResult(t, "toolu_timeline")
	var out struct {
		OK  bool  `json:"ok"`
		Seq int64 `json:"seq"`
	}
	if tr.IsError || json.Unmarshal([]byte(tr.Text), &out) != nil || !out.OK || float64(out.Seq) != entries[0]["seq"] {
		t.Errorf("tool_result %+v does not carry toolhost's result for entry %v", tr, entries[0])
	}

	// Which revision the CLI settled on, and what it probed first: the
	// lines on toolhost's stdio (docs/claude-cli.md keeps the record).
	rev := tap.Revision("toolhost")
	if rev == "" {
		t.Fatalf("the CLI spoke no MCP revision to toolhost: %d messages", len(tap.Sent("toolhost")))
	}
	var probes []string
	for _, r := range tap.Sent("toolhost") {
		if r.Method == "server/discover" {
			answer := "(no answer)"
			if a := tap.Answer("toolhost", r.ID); a != nil {
				answer = string(a.Raw)
			}
			probes = append(probes, string(r.Raw)+" → "+answer)
		}
	}
	t.Logf("claude %s settled on MCP %s; server/discover probes: %v", claudecli.Version(t), rev, probes)
}

// timeline reads the project's timeline.ndjson.
func timeline(t *testing.T, project string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(project, "timeline.ndjson"))
	if err != nil {
		t.Fatalf("timeline: %v", err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("timeline line %q: %v", sc.Bytes(), err)
		}
		out = append(out, e)
	}
	return out
}

// TestRealClaudeBashHook installs toolhost's PreToolUse hook exactly as
// `toolhost mcp-config --settings` prints it and has the scripted model ask
// the CLI's own Bash to post inline JSON to a loopback sink the test
// serves: nothing reaches the sink and the model receives the guard's
// refusal; a harmless command in the agent's allow-list runs. In the
// default permission mode with the agent's --allowedTools (as
// `mcp-config --claude-args` starts the CLI) and in bypassPermissions.
// The control run without the hook shows the same command does reach the
// sink, so the refusal is the hook's doing.
func TestRealClaudeBashHook(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	for _, tc := range []struct {
		name    string
		mode    string
		allowed bool // run with the agent's --allowedTools
		hook    bool
	}{
		{name: "default", allowed: true, hook: true},
		{name: "bypassPermissions", mode: "bypassPermissions", hook: true},
		{name: "control-without-hook", mode: "bypassPermissions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int32
			sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
			defer sink.Close()
			project := t.TempDir()
			post := `curl -s -d '{"a":1}' ` + sink.URL + `/`
			harmless := "mkdir -p units/demo && echo harmless > units/demo/harmless.txt"
			m := claudecli.NewModel(t,
				claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_post", Name: "Bash", Input: map[string]any{"command": post, "description": "post JSON"}}}},
				claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_harmless", Name: "Bash", Input: map[string]any{"command": harmless, "description": "write a file"}}}},
			)
			o := claudecli.RunOptions{Dir: project, PermissionMode: tc.mode}
			if tc.hook {
				o.Settings = run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--settings")
			}
			if tc.allowed {
				o.AllowedTools = allowedTools(t, bin, "devloop-coder", project)
			}
			res := claudecli.Run(t, m, o)
			if res.ExitCode != 0 {
				t.Fatalf("claude: %s", res)
			}
			got, err := os.ReadFile(filepath.Join(project, "units/demo/harmless.txt"))
			if err != nil || string(got) != "harmless\n" {
				t.Errorf("the harmless command did not run: %q, %v; its result: %+v", got, err, m.ToolResult(t, "toolu_harmless"))
			}
			posted := m.ToolResult(t, "toolu_post")
			if !tc.hook {
				if hits.Load() != 1 || posted.IsError {
					t.Fatalf("without the hook the post should reach the sink once: %d hits, result %+v", hits.Load(), posted)
				}
				return
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("the sink got %d requests through the hook", n)
			}
			reason := hookReason(t, o.Settings, project, post)
			if !posted.IsError || !strings.Contains(posted.Text, reason) {
				t.Errorf("the model got %+v, want an error carrying the hook's refusal %q", posted, reason)
			}
			denials, _ := json.Marshal(res.Final()["permission_denials"])
			t.Logf("%s: the model got %q; permission_denials %s", tc.name, posted.Text, denials)
		})
	}
}

// hookReason runs the hook command of a --settings fragment as the CLI
// does (through a shell, the payload on stdin) for a Bash command and
// returns its deny reason.
func hookReason(t *testing.T, settings []byte, project, command string) string {
	t.Helper()
	var s struct {
		Hooks struct {
			PreToolUse []struct {
				Hooks []struct{ Command string } `json:"hooks"`
			} `json:"PreToolUse"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(settings, &s); err != nil || len(s.Hooks.PreToolUse) == 0 || len(s.Hooks.PreToolUse[0].Hooks) == 0 {
		t.Fatalf("settings fragment %s: %v", settings, err)
	}
	payload, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": project, "hook_event_name": "PreToolUse",
		"tool_name": "Bash", "tool_input": map[string]any{"command": command}})
	cmd := exec.Command("sh", "-c", s.Hooks.PreToolUse[0].Hooks[0].Command)
	cmd.Stdin = bytes.NewReader(payload)
	out, err := cmd.Output()
	var d struct {
		HookSpecificOutput struct{ PermissionDecision, PermissionDecisionReason string } `json:"hookSpecificOutput"`
	}
	if err != nil || json.Unmarshal(out, &d) != nil || d.HookSpecificOutput.PermissionDecision != "deny" {
		t.Fatalf("the hook does not deny %q: %s, %v", command, out, err)
	}
	return d.HookSpecificOutput.PermissionDecisionReason
}
