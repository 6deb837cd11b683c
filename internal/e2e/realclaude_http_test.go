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
	var offeredWithHelper []string
	m := claudecli.NewScriptedModel(t, func(req claudecli.Request) claudecli.Turn {
		if req.Turn == 0 {
			offeredWithHelper = req.ToolNames()
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

	if !strings.Contains(strings.Join(offeredWithHelper, ","), "mcp__toolhost__timeline_append") {
		t.Fatalf("with the helper the CLI offered %v", offeredWithHelper)
	}

	// A literal wrong token: the server refuses the CLI, which offers the
	// model no toolhost tool.
	wrong, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"toolhost": map[string]any{
		"type": "http", "url": srv.URL, "headers": map[string]string{"Authorization": "Bearer not-the-token"}}}})
	var offered []string
	m2 := claudecli.NewScriptedModel(t, func(req claudecli.Request) claudecli.Turn {
		if req.Turn == 0 {
			offered = req.ToolNames()
		}
		return claudecli.Turn{Text: "done"}
	})
	res = claudecli.Run(t, m2, claudecli.RunOptions{Dir: project, MCPConfig: wrong, Env: []string{secretsEnv}})
	for _, n := range offered {
		if strings.HasPrefix(n, "mcp__toolhost__") {
			t.Fatalf("with a wrong token the CLI was offered %s (%s)", n, res)
		}
	}
	if entries := timeline(t, project); len(entries) != 1 {
		t.Fatalf("timeline after the wrong token: %v", entries)
	}
}
