package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

// allowedTools is the --allowedTools list `mcp-config --allowed-tools`
// prints for the agent.
func allowedTools(t *testing.T, bin, agent, project string) []string {
	t.Helper()
	return strings.Split(strings.TrimSpace(string(run(t, bin, "mcp-config", "--agent", agent, "--project-dir", project, "--allowed-tools"))), ",")
}

func run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("toolhost %v: %v", args, err)
	}
	return out
}

// TestMCPConfigStartsAServer runs exactly what `toolhost mcp-config` tells
// Claude CLI to run, for every agent, and checks it answers initialize and
// lists the tools the agent's toolPolicy names.
func TestMCPConfigStartsAServer(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	set, err := agents.Parse(configs.AgentsJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, ag := range set.List {
		t.Run(ag.Short, func(t *testing.T) {
			project := t.TempDir()
			var cfg struct {
				MCPServers map[string]struct {
					Type    string            `json:"type"`
					Command string            `json:"command"`
					Args    []string          `json:"args"`
					Env     map[string]string `json:"env"`
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal(run(t, bin, "mcp-config", "--agent", ag.Name, "--project-dir", project), &cfg); err != nil {
				t.Fatalf("mcp-config is not valid JSON: %v", err)
			}
			srv, ok := cfg.MCPServers["toolhost"]
			if !ok || srv.Type != "stdio" || !strings.HasPrefix(srv.Command, "/") {
				t.Fatalf("bad mcpServers.toolhost: %+v", cfg)
			}
			env := os.Environ()
			for k, v := range srv.Env {
				env = append(env, k+"="+v)
			}
			c, err := stdioclient.Start(srv.Command, srv.Args, env)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(5 * time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := c.Initialize(ctx, "2025-11-25", nil); err != nil {
				t.Fatalf("initialize: %v\n%s", err, c.Stderr())
			}
			raw, err := c.Call(ctx, "tools/list", nil)
			if err != nil {
				t.Fatal(err)
			}
			var list struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			_ = json.Unmarshal(raw, &list)
			listed := map[string]bool{}
			for _, tl := range list.Tools {
				listed[tl.Name] = true
				if !ag.Allows(tl.Name) {
					t.Errorf("%s listed but not in %s's toolPolicy", tl.Name, ag.Name)
				}
			}
			// The allowed-tools list is the toolPolicy, MCP tools prefixed.
			allowed := allowedTools(t, bin, ag.Name, project)
			want := map[string]bool{}
			for _, p := range ag.CLI.ToolPolicy {
				if agents.BuiltinCLITools[p] {
					want[p] = true
				} else {
					want["mcp__toolhost__"+p] = true
				}
			}
			if len(allowed) != len(want) {
				t.Errorf("allowed-tools has %d entries, toolPolicy %d", len(allowed), len(want))
			}
			for _, a := range allowed {
				if !want[a] {
					t.Errorf("allowed-tools has %s, not in the toolPolicy", a)
				}
				if name, ok := strings.CutPrefix(a, "mcp__toolhost__"); ok && !listed[name] {
					t.Errorf("allowed tool %s is not served by the configured server", name)
				}
			}
		})
	}
}

// TestExportedAnthropicTools: every agent's exported definitions are valid
// Anthropic API tools.
func TestExportedAnthropicTools(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	set, _ := agents.Parse(configs.AgentsJSON)
	for _, ag := range set.List {
		var defs []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		}
		if err := json.Unmarshal(run(t, bin, "tools", "export", "--agent", ag.Name, "--format", "anthropic"), &defs); err != nil {
			t.Fatalf("%s: %v", ag.Name, err)
		}
		if len(defs) == 0 {
			t.Errorf("%s: no tools exported", ag.Name)
		}
		for _, d := range defs {
			if !tool.NamePattern().MatchString(d.Name) || d.InputSchema["type"] != "object" || d.Description == "" {
				t.Errorf("%s: bad tool definition %s: %v", ag.Name, d.Name, d.InputSchema["type"])
			}
		}
	}
}

// TestSettingsHookDeniesInlineJSON runs the hook command exactly as the
// `mcp-config --settings` fragment installs it, with a real Claude CLI
// PreToolUse payload for a Bash command that posts inline JSON.
func TestSettingsHookDeniesInlineJSON(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	var settings struct {
		Hooks struct {
			PreToolUse []struct {
				Matcher string `json:"matcher"`
				Hooks   []struct {
					Type    string `json:"type"`
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"PreToolUse"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--settings"), &settings); err != nil {
		t.Fatal(err)
	}
	if len(settings.Hooks.PreToolUse) != 1 || len(settings.Hooks.PreToolUse[0].Hooks) != 1 {
		t.Fatalf("want one PreToolUse hook, got %+v", settings)
	}
	entry := settings.Hooks.PreToolUse[0]
	if entry.Matcher != "Bash|Write|Edit|MultiEdit|NotebookEdit" || entry.Hooks[0].Type != "command" {
		t.Fatalf("unexpected hook entry %+v", entry)
	}
	payload := map[string]any{
		"session_id":      "0b5c7e5e-2f8a-4a51-9a7e-3f1f8c2d1a11",
		"transcript_path": "/root/.claude/projects/demo/0b5c7e5e.jsonl",
		"cwd":             project,
		"permission_mode": "default",
		"hook_event_name": "PreToolUse",
		"tool_name":       "Bash",
		"tool_input": map[string]any{
			"command":     `curl -s -X POST http://127.0.0.1:8080/todos -H 'Content-Type: application/json' -d '{"title":"buy milk"}'`,
			"description": "Create a todo through the API",
		},
	}
	in, _ := json.Marshal(payload)
	// Claude CLI runs hook commands with a shell.
	cmd := exec.Command("sh", "-c", entry.Hooks[0].Command)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hook command failed: %v", err)
	}
	var decision struct {
		HookSpecificOutput struct {
			HookEventName            string `json:"hookEventName"`
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &decision); err != nil {
		t.Fatalf("hook stdout is not the decision JSON: %q", out)
	}
	d := decision.HookSpecificOutput
	if d.HookEventName != "PreToolUse" || d.PermissionDecision != "deny" || !strings.Contains(d.PermissionDecisionReason, `@"$TMPDIR/x.json"`) {
		t.Errorf("want a deny that shows the file form, got %+v", d)
	}
}
