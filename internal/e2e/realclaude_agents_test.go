package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/claudecli"
)

// initProject runs `toolhost init` in a new project dir (symlinks
// resolved: the CLI reports paths that way) and returns it.
func initProject(t *testing.T, bin string, args ...string) string {
	t.Helper()
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append([]string{"init", "--project-dir", project}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("toolhost init: %v\n%s", err, out)
	}
	return project
}

// auditRows reads the project's audit trail (its call rows; the chain's
// own records have no tool).
func auditRows(t *testing.T, project string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(project, ".toolhost/audit.ndjson"))
	if err != nil {
		t.Fatalf("audit trail: %v", err)
	}
	var rows []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("audit line %q: %v", sc.Bytes(), err)
		}
		if row["tool"] != nil {
			rows = append(rows, row)
		}
	}
	return rows
}

// rowsFor are the rows of the call the model named toolUseID.
func rowsFor(rows []map[string]any, toolUseID string) []map[string]any {
	var out []map[string]any
	for _, r := range rows {
		if r["tool_use_id"] == toolUseID {
			out = append(out, r)
		}
	}
	return out
}

// writeProbe is, per agent with Bash, a file its allow-list covers (the
// integrator's in a directory of integration/: the directory itself holds
// toolhost's stores, so nothing new is made there directly).
var writeProbe = map[string]string{
	"devloop-coder":      "units/u1/ok.txt",
	"devloop-tester":     "units/u1/tests/ok.txt",
	"devloop-integrator": "integration/cases/ok.txt",
}

// TestRealClaudeAgentsAfterInit: after `toolhost init`, `claude -p --agent
// <agent>` runs each of the six agents as its definition says, in the
// CLI's default permission mode with only Bash approved on the command
// line: the agent's own toolhost server is connected (the project's
// permission rules approve its tools), one of its tools runs and the audit
// row names the agent, the CLI's session and the model's tool_use id;
// where the agent has Bash, a write inside its allow-list lands and one
// outside is refused by the kernel, each decision audited once although
// two toolhost hooks (the agent's and the project's) decide it; an agent
// without Bash has no Bash tool at all.
func TestRealClaudeAgentsAfterInit(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	set, err := agents.Parse(configs.AgentsJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, ag := range set.List {
		t.Run(ag.Short, func(t *testing.T) {
			t.Parallel()
			project := initProject(t, bin)
			for _, d := range []string{"units/u1/tests", "prd", "integration/cases"} {
				if err := os.MkdirAll(filepath.Join(project, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			hasBash := ag.Allows("Bash")
			inside := writeProbe[ag.Name]
			tl := "mcp__toolhost-" + ag.Short + "__timeline_append"
			turns := []claudecli.Turn{{ToolUses: []claudecli.ToolUse{{ID: "toolu_tl", Name: tl,
				Input: map[string]any{"kind": "agent.check", "message": "hello from " + ag.Name}}}}}
			if hasBash {
				turns = append(turns,
					claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_in", Name: "Bash",
						Input: map[string]any{"command": "echo inside > " + inside + " && cat " + inside, "description": "write inside"}}}},
					claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_out", Name: "Bash",
						Input: map[string]any{"command": "echo hacked > prd/hack.txt", "description": "write outside"}}}})
			} else {
				turns = append(turns, claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_nobash", Name: "Bash",
					Input: map[string]any{"command": "echo hacked > prd/hack.txt", "description": "no Bash here"}}}})
			}
			m := claudecli.NewModel(t, turns...)
			o := claudecli.RunOptions{Dir: project, Trust: []string{project}, Args: []string{"--agent", ag.Name}}
			if hasBash {
				o.AllowedTools = []string{"Bash"}
			}
			res := claudecli.Run(t, m, o)
			if res.ExitCode != 0 {
				t.Fatalf("claude: %s", res)
			}
			init := res.Event("system", "init")
			session, _ := init["session_id"].(string)
			servers, _ := json.Marshal(init["mcp_servers"])
			if !strings.Contains(string(servers), `"name":"toolhost-`+ag.Short+`","source":"agent","status":"connected"`) {
				t.Fatalf("the agent's own server is not connected: mcp_servers %s\n%s", servers, res)
			}
			var tools []string
			for _, x := range init["tools"].([]any) {
				tools = append(tools, x.(string))
			}
			if slices.Contains(tools, "Bash") != hasBash || !slices.Contains(tools, tl) {
				t.Errorf("tools %v: want %s, and Bash only if %s has it", tools, tl, ag.Name)
			}

			if tr := m.ToolResult(t, "toolu_tl"); tr.IsError || !strings.Contains(tr.Text, `"ok":true`) {
				t.Fatalf("timeline_append: %+v", tr)
			}
			entries := timeline(t, project)
			if len(entries) != 1 || entries[0]["agent"] != ag.Short || entries[0]["message"] != "hello from "+ag.Name {
				t.Errorf("timeline %v, want the agent's entry", entries)
			}
			rows := auditRows(t, project)
			call := rowsFor(rows, "toolu_tl")
			if len(call) != 1 || call[0]["tool"] != "timeline_append" || call[0]["agent"] != ag.Short || session == "" || call[0]["client_session_id"] != session {
				t.Errorf("audit rows of the call: %v; want one naming agent %s and the CLI's session %s", call, ag.Short, session)
			}

			if !hasBash {
				if tr := m.ToolResult(t, "toolu_nobash"); !tr.IsError || !strings.Contains(tr.Text, "No such tool available") {
					t.Errorf("Bash for %s: %+v, want no such tool", ag.Name, tr)
				}
				if _, err := os.Stat(filepath.Join(project, "prd/hack.txt")); err == nil {
					t.Error("an agent without Bash wrote a file with it")
				}
				return
			}
			if got, err := os.ReadFile(filepath.Join(project, inside)); err != nil || string(got) != "inside\n" {
				t.Errorf("the write inside %s: %q %v; result %+v", inside, got, err, m.ToolResult(t, "toolu_in"))
			}
			if _, err := os.Stat(filepath.Join(project, "prd/hack.txt")); err == nil {
				t.Error("the CLI's Bash wrote prd/hack.txt, outside the allow-list")
			}
			if tr := m.ToolResult(t, "toolu_out"); !tr.IsError || !strings.Contains(tr.Text, "prd/hack.txt: Permission denied") {
				t.Errorf("the write outside: %+v, want the kernel's refusal", tr)
			}
			for _, id := range []string{"toolu_in", "toolu_out"} {
				hook := rowsFor(rows, id)
				if len(hook) != 1 || hook[0]["source"] != "hook" || hook[0]["tool"] != "Bash" || hook[0]["agent"] != ag.Short ||
					hook[0]["status"] != "ok" || hook[0]["client_session_id"] != session {
					t.Errorf("hook rows of %s: %v; want one, allowing (the kernel refuses what is outside), naming the agent and session", id, hook)
				}
			}
		})
	}
}
