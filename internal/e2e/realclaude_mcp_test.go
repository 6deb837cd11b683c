package e2e

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/claudecli"
)

// TestRealClaude2026 runs the real Claude CLI against toolhost, which now
// answers its server/discover probe: the CLI must settle on 2026-07-28 (no
// initialize at all), its tool calls must work, and a tool that needs
// confirmation must be finishable headless. In -p mode nobody can answer
// the InputRequiredResult, so the CLI retries with an answer that is not
// "accept"; toolhost must not tell the model "declined, do not repeat" for
// that, but hand it the `toolhost approve` command — after which (the test
// plays the human) the same call runs.
func TestRealClaude2026(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	cfgJSON := run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--policy", confirmPolicyFile(t))
	cfg, tap := claudecli.TapMCP(t, cfgJSON)
	allowed := strings.Split(strings.TrimSpace(string(run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--allowed-tools"))), ",")
	args := map[string]any{"kind": "cli.confirm", "message": "needs a human"}
	approveID := regexp.MustCompile(`toolhost approve (cf-[0-9A-Z]+)`)
	var first claudecli.ToolResult
	var approveOut []byte
	m := claudecli.NewScriptedModel(t, func(req claudecli.Request) claudecli.Turn {
		switch req.Turn {
		case 0:
			return claudecli.Turn{Text: "recording", ToolUses: []claudecli.ToolUse{{ID: "toolu_first", Name: "mcp__toolhost__timeline_append", Input: args}}}
		case 1:
			for _, r := range req.ToolResults() {
				if r.ToolUseID == "toolu_first" {
					first = r
				}
			}
			id := approveID.FindStringSubmatch(first.Text)
			if id == nil {
				return claudecli.Turn{Text: "stopping: no approval id"}
			}
			// The human approves out of band, then the model repeats the call.
			var err error
			if approveOut, err = exec.Command(bin, "approve", id[1], "--project-dir", project).CombinedOutput(); err != nil {
				return claudecli.Turn{Text: "stopping: approve failed"}
			}
			return claudecli.Turn{Text: "approved, again", ToolUses: []claudecli.ToolUse{{ID: "toolu_again", Name: "mcp__toolhost__timeline_append", Input: args}}}
		}
		return claudecli.Turn{Text: "done"}
	})
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, MCPConfig: cfg, AllowedTools: allowed})
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}

	rev := tap.Revision("toolhost")
	var methods []string
	var retries []string
	for _, r := range tap.Sent("toolhost") {
		methods = append(methods, r.Method)
		if r.Method == "tools/call" && strings.Contains(string(r.Params), "requestState") {
			var p struct {
				InputResponses json.RawMessage `json:"inputResponses"`
			}
			_ = json.Unmarshal(r.Params, &p)
			retries = append(retries, string(p.InputResponses))
		}
	}
	t.Logf("claude %s settled on MCP %s; methods sent: %v; multi-round-trip retries answered %v",
		claudecli.Version(t), rev, methods, retries)
	if rev != "2026-07-28" {
		t.Errorf("the CLI settled on %q, want 2026-07-28 now that toolhost answers server/discover", rev)
	}
	for _, meth := range methods {
		if meth == "initialize" {
			t.Errorf("the CLI fell back to initialize: %v", methods)
		}
	}
	if first.IsError && strings.Contains(first.Text, "declined by user") {
		t.Fatalf("a headless CLI's non-answer was taken for a human's no: %q", first.Text)
	}
	if !strings.Contains(first.Text, "needs_confirmation") || approveOut == nil {
		t.Fatalf("the first call must wait for toolhost approve; tool_result %+v, approve output %s", first, approveOut)
	}
	again := m.ToolResult(t, "toolu_again")
	if again.IsError || !strings.Contains(again.Text, `"ok":true`) {
		t.Fatalf("the approved call: %+v", again)
	}
	if entries := timeline(t, project); len(entries) != 1 || entries[0]["message"] != "needs a human" {
		t.Fatalf("timeline: %v, want the one approved entry", entries)
	}
}
