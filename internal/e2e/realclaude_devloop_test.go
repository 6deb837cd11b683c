package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/claudecli"
	"github.com/toolhost/toolhost/internal/vitest/vitesttest"
)

// subagentOf names the devloop agent whose system prompt a request
// carries ("" for the main thread): toolhost init's prompts open with it.
var subagentOf = regexp.MustCompile(`You are the [A-Za-z ]+ \((devloop-[a-z-]+)\) of the toolhost devloop`)

// step is one tool call of a subagent's script, made from what its
// earlier calls returned (nil: the script is done).
type step func(results []claudecli.ToolResult) *claudecli.ToolUse

// field decodes one field of a tool result's JSON.
func field(tr claudecli.ToolResult, path ...string) any {
	var v any
	_ = json.Unmarshal([]byte(tr.Text), &v)
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// TestRealClaudeDevloop is the main job through the real CLI: after
// `toolhost init`, one `claude -p` main session delegates with the Agent
// tool to the six agents in loop order, and each subagent, with its own
// toolhost server and hooks, makes the devloop's real calls: the PM writes
// the PRD site (and its Write into units/ is refused by the hook), the
// Architect writes the contract with the CLI's Write and hashes it, the
// Coder bridges it and builds in Bash, the Tester reads a real Vitest
// report and opens a bug, the Integrator starts the unit in its own
// process group, waits for its health, runs an HTTP case that finds the
// missing route and opens a bug, and the Triager verifies that bug's
// evidence and classifies it. Every row of the trail carries the CLI's
// session; the hooks' rows also the subagent's agent_id. After the CLI
// exits no toolhost server and no unit is left (by pid and start time).
func TestRealClaudeDevloop(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := initProject(t, bin)
	// The Tester's report is a real Vitest run of a unit with failures.
	report := vitesttest.RunUnit(t, 3, project, "todo-ts")
	contract, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/demo/assets/todo-contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	unitSource, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/demo/unit.go"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := agents.Parse(configs.AgentsJSON)
	if err != nil {
		t.Fatal(err)
	}
	loop := set.List
	var mu sync.Mutex
	var unit procs.Process // the unit spawn_units started, seen while it ran
	tool := func(ag, name string, input map[string]any) *claudecli.ToolUse {
		return &claudecli.ToolUse{ID: "toolu_" + strings.TrimPrefix(ag, "devloop-") + "_" + name, Name: "mcp__toolhost-" + strings.TrimPrefix(ag, "devloop-") + "__" + name, Input: input}
	}
	base := "http://127.0.0.1:{{port:todo-be}}/todos"
	scripts := map[string][]step{
		"devloop-pm": {
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-pm", "bootstrap_prd_site", map[string]any{"title": "Todo service", "chapters": []map[string]any{{"id": "overview", "title": "Overview"}, {"id": "stories", "title": "User stories"}}})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-pm", "write_chapter", map[string]any{"site": "prd", "chapter_id": "stories",
					"html": "<section><h2>Create a todo</h2><p>A user adds a todo.</p></section><section><h2>Delete a todo</h2><p>A user removes a todo.</p></section>"})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-pm", "validate_prd_site", map[string]any{})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return &claudecli.ToolUse{ID: "toolu_pm_write_units", Name: "Write", Input: map[string]any{"file_path": filepath.Join(project, "units/todo-be/src/hack.ts"), "content": "export const pm = 1;\n"}}
			},
		},
		"devloop-architect": {
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-architect", "bootstrap_sdd_site", map[string]any{"title": "Todo service design", "chapters": []map[string]any{{"id": "api", "title": "API"}}})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return &claudecli.ToolUse{ID: "toolu_architect_write_contract", Name: "Write", Input: map[string]any{"file_path": filepath.Join(project, "contracts/todo.json"), "content": string(contract)}}
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-architect", "hash_contract", map[string]any{"path": "contracts/todo.json"})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-architect", "write_chapter", map[string]any{"site": "sdd", "chapter_id": "api",
					"html": `<section data-prd-ref="stories.html#create-a-todo stories.html#delete-a-todo" data-contract="todo"><h2>Endpoints</h2><p>contracts/todo.json</p></section>`})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-architect", "validate_sdd_consistency", map[string]any{})
			},
		},
		"devloop-coder": {
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-coder", "contract_bridge", map[string]any{"contract": "todo", "unit_id": "todo-be", "lang": "ts"})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return &claudecli.ToolUse{ID: "toolu_coder_write_source", Name: "Write", Input: map[string]any{"file_path": filepath.Join(project, "units/todo-be/src/server.go"), "content": string(unitSource)}}
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return &claudecli.ToolUse{ID: "toolu_coder_bash", Name: "Bash", Input: map[string]any{"command": "cd units/todo-be && ls src && echo built > build.txt", "description": "build"}}
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-coder", "append_coder_log", map[string]any{"kind": "implement", "message": "todo API", "files": []string{"units/todo-be/src/server.go"}})
			},
		},
		"devloop-tester": {
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-tester", "parse_vitest", map[string]any{"report_path": report.ReportRel})
			},
			func(rs []claudecli.ToolResult) *claudecli.ToolUse {
				failures, _ := field(rs[0], "failures").([]any)
				var f map[string]any
				for _, x := range failures {
					if m := x.(map[string]any); m["name"] != "" && f == nil {
						f = m
					}
				}
				if f == nil {
					t.Errorf("parse_vitest found no named failure: %.300s", rs[0].Text)
					return nil
				}
				return tool("devloop-tester", "bug_open", map[string]any{"title": fmt.Sprint(f["name"]), "unit_id": "todo-ts", "severity": "major",
					"evidence": map[string]any{"test": f["name"], "test_file": f["file"], "report": report.ReportRel}})
			},
		},
		"devloop-integrator": {
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-integrator", "port_picker", map[string]any{"units": []string{"todo-be"}})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-integrator", "spawn_units", map[string]any{"action": "start", "units": []map[string]any{{"id": "todo-be", "argv": []string{bin, "demo-unit"}}}})
			},
			func(rs []claudecli.ToolResult) *claudecli.ToolUse {
				port := field(rs[0], "ports", "todo-be")
				units, _ := field(rs[1], "units").([]any)
				if len(units) == 1 {
					if pid, ok := units[0].(map[string]any)["pid"].(float64); ok {
						if st, err := procs.ReadStat(int(pid)); err == nil {
							mu.Lock()
							unit = procs.Process{PID: st.PID, StartTicks: st.StartTicks}
							mu.Unlock()
						}
					}
				}
				return tool("devloop-integrator", "health_wait", map[string]any{"targets": []map[string]any{{"unit": "todo-be", "url": fmt.Sprintf("http://127.0.0.1:%v/health", port)}}, "timeout_ms": 20000, "interval_ms": 100})
			},
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-integrator", "run_case", map[string]any{"case": map[string]any{"id": "todo-crud", "steps": []map[string]any{
					{"name": "create", "method": "POST", "url": base, "body": map[string]any{"title": "write the demo"}, "expect": map[string]any{"status": 201}, "capture": map[string]any{"id": "/id"}},
					{"name": "delete", "method": "DELETE", "url": base + "/{{var:id}}", "expect": map[string]any{"status": 204}},
				}}})
			},
			func(rs []claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-integrator", "bug_open", map[string]any{"title": "DELETE /todos/{id} answers 405 where the contract promises 204", "unit_id": "todo-be", "severity": "major",
					"evidence": map[string]any{"run_id": field(rs[3], "run_id"), "repro": "POST /todos then DELETE /todos/<id>: 405, contract todo says 204"}})
			},
		},
		"devloop-bug-triager": {
			func([]claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-bug-triager", "bug_list", map[string]any{"status": "open"})
			},
			func(rs []claudecli.ToolResult) *claudecli.ToolUse {
				bugs, _ := field(rs[0], "bugs").([]any)
				for _, b := range bugs {
					if m := b.(map[string]any); strings.HasPrefix(fmt.Sprint(m["title"]), "DELETE") {
						return tool("devloop-bug-triager", "extract_evidence", map[string]any{"bug_id": m["id"]})
					}
				}
				t.Errorf("bug_list has no DELETE bug: %.500s", rs[0].Text)
				return nil
			},
			func(rs []claudecli.ToolResult) *claudecli.ToolUse {
				return tool("devloop-bug-triager", "category_classifier", map[string]any{"bug_id": field(rs[1], "bug_id")})
			},
		},
	}
	m := claudecli.NewScriptedModel(t, func(r claudecli.Request) claudecli.Turn {
		results := allResults(r)
		if sm := subagentOf.FindStringSubmatch(r.SystemText()); sm != nil {
			script := scripts[sm[1]]
			if len(results) < len(script) {
				if u := script[len(results)](results); u != nil {
					return claudecli.Turn{ToolUses: []claudecli.ToolUse{*u}}
				}
			}
			return claudecli.Turn{Text: sm[1] + " done: handing over"}
		}
		// The main thread: the next agent of the loop, once the last one
		// answered.
		if len(results) < len(loop) {
			next := loop[len(results)]
			return claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_delegate_" + next.Short, Name: "Agent", Input: map[string]any{
				"description": "devloop " + next.Loop, "prompt": "Do your step of the devloop for the todo service.", "subagent_type": next.Name, "run_in_background": false}}}}
		}
		return claudecli.Turn{Text: "the devloop ran: PRD, SDD and contract, code, tests, integration, triage"}
	})

	var left []string
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, Trust: []string{project}, PermissionMode: "bypassPermissions",
		Prompt: "Run the devloop for the todo service.", Timeout: 8 * time.Minute,
		AfterExit: func(running func() []string) { left = leftovers(t, project, &mu, &unit, running) }})
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}
	session, _ := res.Event("system", "init")["session_id"].(string)

	// The loop order, as the model saw the agents start.
	var order []string
	for _, r := range m.Requests() {
		if sm := subagentOf.FindStringSubmatch(r.SystemText()); sm != nil && !slices.Contains(order, sm[1]) {
			order = append(order, sm[1])
		}
	}
	var want []string
	for _, a := range loop {
		want = append(want, a.Name)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("the subagents ran in the order %v, want %v", order, want)
	}
	byID := map[string]claudecli.ToolResult{}
	for _, tr := range m.ToolResults() {
		byID[tr.ToolUseID] = tr
		if tr.IsError && tr.ToolUseID != "toolu_pm_write_units" {
			t.Errorf("%s (%s) failed: %.400s", tr.ToolUseID, tr.ToolName, tr.Text)
		}
	}
	for _, a := range loop {
		if tr, ok := byID["toolu_delegate_"+a.Short]; !ok || !strings.Contains(tr.Text, a.Name+" done") {
			t.Errorf("the main thread did not get %s's report: %+v", a.Name, tr)
		}
	}

	// The PM's Write into the Coder's tree: refused by the hook, nothing
	// written.
	if tr := byID["toolu_pm_write_units"]; !tr.IsError || !strings.Contains(tr.Text, "Sandbox violation: devloop-pm tried to write units/todo-be/src/hack.ts") {
		t.Errorf("the PM's Write into units/: %+v, want the hook's refusal", tr)
	}
	if _, err := os.Stat(filepath.Join(project, "units/todo-be/src/hack.ts")); err == nil {
		t.Error("the PM wrote into units/")
	}
	// What the agents made, on disk and in their results.
	sha, _ := field(byID["toolu_architect_hash_contract"], "sha256").(string)
	if len(sha) != 64 {
		t.Errorf("hash_contract: %.300s", byID["toolu_architect_hash_contract"].Text)
	}
	files, _ := field(byID["toolu_coder_contract_bridge"], "files").([]any)
	if len(files) != 1 || field(byID["toolu_coder_contract_bridge"], "sha256") != sha {
		t.Errorf("contract_bridge: %.300s; want one file from contract sha256 %s", byID["toolu_coder_contract_bridge"].Text, sha)
	} else if b, err := os.ReadFile(filepath.Join(project, files[0].(string))); err != nil || !strings.Contains(string(b), sha) {
		t.Errorf("%s does not carry the contract's hash: %v", files[0], err)
	}
	if b, err := os.ReadFile(filepath.Join(project, "units/todo-be/build.txt")); err != nil || string(b) != "built\n" {
		t.Errorf("the Coder's Bash: %q %v; result %+v", b, err, byID["toolu_coder_bash"])
	}
	if id := field(byID["toolu_tester_bug_open"], "id"); id != "BUG-0001" {
		t.Errorf("the Tester's bug: %.300s", byID["toolu_tester_bug_open"].Text)
	}
	if field(byID["toolu_integrator_health_wait"], "targets") == nil || field(byID["toolu_integrator_run_case"], "failed") != float64(1) {
		t.Errorf("health_wait %.300s / run_case %.500s: want the unit ready and the delete step failing", byID["toolu_integrator_health_wait"].Text, byID["toolu_integrator_run_case"].Text)
	}
	if id := field(byID["toolu_integrator_bug_open"], "id"); id != "BUG-0002" {
		t.Errorf("the Integrator's bug: %.300s", byID["toolu_integrator_bug_open"].Text)
	}
	if got := field(byID["toolu_bug-triager_extract_evidence"], "evidence_status"); got != "verified" {
		t.Errorf("extract_evidence: %.500s", byID["toolu_bug-triager_extract_evidence"].Text)
	}
	if got := field(byID["toolu_bug-triager_category_classifier"], "category"); got != "contract_mismatch" {
		t.Errorf("category_classifier: %.500s", byID["toolu_bug-triager_category_classifier"].Text)
	}

	// The trail: every row of the session names it; the hooks' rows name
	// the subagent that made the call.
	rows := auditRows(t, project)
	agentsSeen := map[string]bool{}
	for _, r := range rows {
		if r["client_session_id"] != session {
			t.Errorf("row without the CLI's session %s: %v", session, r)
		}
		agentsSeen[fmt.Sprint(r["agent"])] = true
		if r["source"] == "hook" && r["client_agent_id"] == nil {
			t.Errorf("hook row without the subagent's agent_id: %v", r)
		}
	}
	if len(agentsSeen) != 6 {
		t.Errorf("the trail has rows of %v, want the six agents", agentsSeen)
	}
	if hook := rowsFor(rows, "toolu_pm_write_units"); len(hook) != 1 || hook[0]["status"] != "rejected" || hook[0]["error_kind"] != "sandbox" || hook[0]["agent"] != "pm" {
		t.Errorf("the hook's row of the PM's Write: %v", hook)
	}
	if len(left) > 0 {
		t.Errorf("left running after the CLI exited: %v", left)
	}
	t.Logf("claude %s: %d model requests, %d tool results, %d audit rows; the Integrator's case: %.200s",
		claudecli.Version(t), len(m.Requests()), len(byID), len(rows), byID["toolu_integrator_run_case"].Text)
}

// allResults are the tool results of a request's conversation, in order.
func allResults(r claudecli.Request) []claudecli.ToolResult {
	var out []claudecli.ToolResult
	for i := range r.Messages {
		sub := claudecli.Request{Messages: r.Messages[:i+1]}
		out = append(out, sub.ToolResults()...)
	}
	return out
}

// leftovers waits (a bounded while: the CLI's servers end on their own once
// their stdin closes) for every toolhost server the project's events
// announced and for the unit to be gone (by pid and start time), and for
// every other process of the run — one that still carries the CLI's
// environment (running), or that works in the project or names it on its
// command line (a hook, a confined command, a unit whose environment was
// filtered) — and names those still running.
func leftovers(t *testing.T, project string, mu *sync.Mutex, unit *procs.Process, running func() []string) []string {
	b, err := os.ReadFile(filepath.Join(project, ".toolhost/events.ndjson"))
	if err != nil {
		return []string{"no events: " + err.Error()}
	}
	watch := map[string]procs.Process{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e struct {
			Kind    string        `json:"kind"`
			Agent   string        `json:"agent"`
			Payload store.Process `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == store.EventSessionStart {
			watch[fmt.Sprintf("toolhost serve of %s (pid %d)", e.Agent, e.Payload.PID)] = procs.Process{PID: e.Payload.PID, StartTicks: e.Payload.StartTicks}
		}
	}
	mu.Lock()
	if unit.PID > 0 {
		watch[fmt.Sprintf("unit todo-be (pid %d)", unit.PID)] = *unit
	} else {
		t.Error("the unit's pid was not seen while it ran")
	}
	mu.Unlock()
	if len(watch) < 6 {
		t.Errorf("the events announce %d servers, want one per agent at least: %v", len(watch), watch)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var left []string
		for name, p := range watch {
			if procs.Alive(p.PID, p.StartTicks) {
				left = append(left, name)
			}
		}
		left = append(left, running()...)
		left = append(left, inProject(project)...)
		if len(left) == 0 || time.Now().After(deadline) {
			slices.Sort(left)
			return slices.Compact(left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inProject names the processes (other than this one) whose working
// directory is project or inside it, or whose command line names it, as
// "pid N: command line". A zombie has neither: it is not listed.
func inProject(project string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		if cwd == project || strings.HasPrefix(cwd, project+"/") || bytes.Contains(cmdline, []byte(project)) {
			out = append(out, fmt.Sprintf("pid %d: %s", pid, bytes.TrimSpace(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
		}
	}
	return out
}
