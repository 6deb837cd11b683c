package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/claudecli"
)

// TestRealClaudeOverHTTP: the real Claude CLI reaches a running `serve
// --http` with the configuration `toolhost mcp-config --http URL` prints:
// the CLI runs its headersHelper (toolhost itself, reading the token from
// the secrets directory) and its tool calls run. The configuration and the
// CLI's command line hold no token; a configuration with a wrong literal
// header gets the CLI no tools at all.
func TestRealClaudeOverHTTP(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	secretsEnv := "TOOLHOST_SECRETS_DIR=" + t.TempDir()
	srv := testutil.ServeHTTPEnv(t, bin, []string{secretsEnv}, "--agent", "devloop-coder", "--project-dir", project)

	cmd := exec.Command(bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--http", srv.URL)
	cmd.Env = append(os.Environ(), secretsEnv)
	cfg, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-config --http: %v", err)
	}
	if strings.Contains(string(cfg), srv.Token) {
		t.Fatalf("the configuration holds the token: %s", cfg)
	}
	var doc struct {
		MCPServers map[string]struct {
			Type, URL, HeadersHelper string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(cfg, &doc); err != nil || doc.MCPServers["toolhost"].HeadersHelper == "" || doc.MCPServers["toolhost"].Type != "http" {
		t.Fatalf("mcp-config --http: %s (%v)", cfg, err)
	}

	args := map[string]any{"kind": "cli.http", "message": "over HTTP with the helper's token"}
	m := claudecli.NewScriptedModel(t, func(req claudecli.Request) claudecli.Turn {
		if req.Turn == 0 {
			return claudecli.Turn{Text: "recording", ToolUses: []claudecli.ToolUse{{ID: "toolu_http", Name: "mcp__toolhost__timeline_append", Input: args}}}
		}
		return claudecli.Turn{Text: "done"}
	})
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, MCPConfig: cfg, Env: []string{secretsEnv},
		AllowedTools: []string{"mcp__toolhost__timeline_append"}})
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}
	if r := m.ToolResult(t, "toolu_http"); r.IsError || !strings.Contains(r.Text, `"ok":true`) {
		t.Fatalf("the call over HTTP: %+v\nserver log:\n%s", r, srv.Log())
	}
	if entries := timeline(t, project); len(entries) != 1 || entries[0]["message"] != args["message"] {
		t.Fatalf("timeline %v", entries)
	}

	// A literal wrong token: the server refuses the CLI, and the model's
	// call of the tool does not run.
	wrong, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"toolhost": map[string]any{
		"type": "http", "url": srv.URL, "headers": map[string]string{"Authorization": "Bearer not-the-token"}}}})
	m2 := claudecli.NewScriptedModel(t, func(req claudecli.Request) claudecli.Turn {
		if req.Turn == 0 {
			return claudecli.Turn{Text: "recording", ToolUses: []claudecli.ToolUse{{ID: "toolu_wrong", Name: "mcp__toolhost__timeline_append", Input: args}}}
		}
		return claudecli.Turn{Text: "done"}
	})
	res = claudecli.Run(t, m2, claudecli.RunOptions{Dir: project, MCPConfig: wrong, Env: []string{secretsEnv},
		AllowedTools: []string{"mcp__toolhost__timeline_append"}})
	if r := m2.ToolResult(t, "toolu_wrong"); !r.IsError {
		t.Fatalf("with a wrong token the call answered %+v (%s)", r, res)
	}
	if entries := timeline(t, project); len(entries) != 1 {
		t.Fatalf("timeline after the wrong token: %v", entries)
	}
}
