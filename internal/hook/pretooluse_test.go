package hook_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

func TestHookPreToolUse(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proj, "units/todo-be/src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(proj, "units/todo-be/out")); err != nil {
		t.Fatal(err)
	}
	in := func(p string) string { return filepath.Join(proj, p) }
	cases := []struct {
		name     string
		stdin    string
		flags    []string
		deny     string // "" means allow; else part of the reason
		exitCode bool
		// rewritten: the allowed Bash command comes back confined
		// (hook_confine_test.go checks the rewrite itself).
		rewritten bool
	}{
		{name: "bash allowed", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": "npm test -- --reporter=json > report.json", "description": "run tests"}), rewritten: true},
		{name: "bash inline json", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": `curl -X POST -d '{"title":"x"}' http://localhost:3000/todos`}),
			deny: `echo '{"title":"x"}' > "$TMPDIR/x.json" && curl -X POST -d @"$TMPDIR/x.json" http://localhost:3000/todos`},
		{name: "bash inline json exit code mode", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": `bash -c "http POST :3000 a:='[1]'"`}),
			deny: "Bash guard", exitCode: true},
		{name: "write in allow-list", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"file_path": in("units/todo-be/src/index.ts"), "content": "export {}\n"})},
		{name: "edit relative to cwd", stdin: testutil.PreToolUsePayload(in("units/todo-be"), "Edit", map[string]any{"file_path": "src/index.ts", "old_string": "a", "new_string": "b"})},
		{name: "notebook edit", stdin: testutil.PreToolUsePayload(proj, "NotebookEdit", map[string]any{"notebook_path": in("units/todo-be/n.ipynb"), "new_source": "x"})},
		{name: "write another agent's tree", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"file_path": in("prd/index.html"), "content": "x"}),
			deny: "Sandbox violation: devloop-coder tried to write prd/index.html (allowed: units/**, agent-state/coder-*.json, memory/devloop/coder/**)"},
		{name: "write outside the project", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"file_path": "/etc/cron.d/x", "content": "x"}),
			deny: "outside the project dir"},
		{name: "dotdot out of the project", stdin: testutil.PreToolUsePayload(proj, "Edit", map[string]any{"file_path": in("units/../../x"), "old_string": "a", "new_string": "b"}),
			deny: "outside the project dir"},
		{name: "multiedit through symlink", stdin: testutil.PreToolUsePayload(proj, "MultiEdit", map[string]any{"file_path": in("units/todo-be/out/x.ts"), "edits": []any{}}),
			deny: "units/todo-be/out is a symlink"},
		{name: "dot directory", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"file_path": in("units/todo-be/.git/hooks/pre-commit"), "content": "x"}),
			deny: "dot-directory .git", exitCode: true},
		{name: "a store of toolhost's", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"file_path": in(".toolhost/units.json"), "content": "{}"}),
			flags: []string{"--agent", "devloop-integrator"}, deny: ".toolhost/units.json is toolhost's own store"},
		{name: "dotdot after a symlink", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"file_path": proj + "/units/todo-be/out/../src/x.ts", "content": "x"}),
			deny: `".."`},
		{name: "notebook path behind a file_path", stdin: testutil.PreToolUsePayload(proj, "NotebookEdit", map[string]any{"file_path": in("units/todo-be/src/a.ts"), "notebook_path": in("prd/n.ipynb"), "new_source": "x"}),
			deny: "tried to write prd/n.ipynb"},
		{name: "command key in another case", stdin: `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"curl -d '{\"a\":1}' http://x","COMMAND":"ls"}}`,
			deny: "Bash guard"},
		{name: "tool_name key in another case", stdin: `{"hook_event_name":"PreToolUse","tool_name":"Bash","Tool_Name":"Read","tool_input":{"command":"curl -d '{\"a\":1}' http://x"}}`,
			deny: "Bash guard"},
		{name: "file_path key in another case", stdin: `{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/etc/x","FILE_PATH":"units/x"}}`,
			deny: "outside the project dir"},
		{name: "read is not checked", stdin: testutil.PreToolUsePayload(proj, "Read", map[string]any{"file_path": "/etc/passwd"})},
		{name: "malformed json", stdin: `{"tool_name": "Bash", "tool_input": {"command": `, deny: "malformed hook input"},
		{name: "empty input", stdin: ``, deny: "malformed hook input"},
		{name: "trailing data", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": "ls"}) + ` {"tool_name":"Bash"}`, deny: "malformed hook input"},
		{name: "not an object", stdin: `null`, deny: "malformed hook input"},
		{name: "missing command", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"cmd": "ls"}), deny: "tool_input.command is missing"},
		{name: "command not a string", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": []string{"ls"}}), deny: "tool_input.command is not a string (an array)"},
		{name: "command null", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": nil}), deny: "tool_input.command is not a string (null)"},
		{name: "command a number", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": 7}), deny: "tool_input.command is not a string (a number)"},
		{name: "command an object", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": map[string]any{"a": 1}}), deny: "tool_input.command is not a string (an object)", exitCode: true},
		{name: "tool_input null", stdin: `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":null}`, deny: "tool_input.command is missing"},
		{name: "bash with an unknown agent", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": "ls"}),
			flags: []string{"--agent", "devloop-nobody"}, deny: "unknown agent"},
		// No agent named, none in the payload (the main thread) and no
		// --lead: toolhost decides nothing (hook_agent_test.go).
		{name: "bash without an agent", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": "ls"}),
			flags: []string{"--agent="}},
		{name: "bash without a project dir", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": "ls"}),
			flags: []string{"--project-dir="}, deny: "--project-dir (or TOOLHOST_PROJECT_DIR) is required"},
		{name: "bash with a missing project dir", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": "ls"}),
			flags: []string{"--project-dir", filepath.Join(proj, "nope")}, deny: "is not usable", exitCode: true},
		{name: "read with an unknown agent", stdin: testutil.PreToolUsePayload(proj, "Read", map[string]any{"file_path": in("units/x")}),
			flags: []string{"--agent", "devloop-nobody"}, deny: "unknown agent"},
		{name: "bash over the guard's budget", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": "a=xxxxxxxx; " + strings.Repeat("a=$a$a; ", 30)}),
			deny: "a word expands to more than"},
		{name: "bash with a dynamic client", stdin: testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": `"$(cat p)" -d '{"a":1}' http://x`}),
			deny: "Instead: write the program's name literally"},
		{name: "missing file_path", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"content": "x"}), deny: "has no file_path"},
		{name: "no tool name", stdin: `{"hook_event_name":"PreToolUse","tool_input":{}}`, deny: "no tool_name"},
		{name: "wrong event", stdin: strings.Replace(testutil.PreToolUsePayload(proj, "Bash", map[string]any{"command": "ls"}), `"hook_event_name":"PreToolUse"`, `"hook_event_name":"PostToolUse"`, 1), deny: "only handles PreToolUse"},
		{name: "unknown agent", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"file_path": in("units/x"), "content": "x"}),
			flags: []string{"--agent", "devloop-nobody"}, deny: "unknown agent"},
		{name: "missing project dir", stdin: testutil.PreToolUsePayload(proj, "Write", map[string]any{"file_path": in("units/x"), "content": "x"}),
			flags: []string{"--project-dir", filepath.Join(proj, "nope")}, deny: "is not usable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"hook", "pretooluse", "--agent", "devloop-coder", "--project-dir", proj}
			args = append(args, tc.flags...)
			if tc.exitCode {
				args = append(args, "--exit-code")
			}
			stdout, stderr, code := testutil.Run(t, tc.stdin, nil, args...)
			if !strings.Contains(stderr, `"event":"hook_decision"`) {
				t.Errorf("the decision was not logged on stderr: %q", stderr)
			}
			switch {
			case tc.rewritten:
				if code != 0 || !strings.Contains(stdout, `"updatedInput"`) || strings.Contains(stdout, "permissionDecision") {
					t.Fatalf("allowed Bash: exit %d stdout %q stderr %q; want exit 0 and an updatedInput without a decision", code, stdout, stderr)
				}
			case tc.deny == "":
				if code != 0 || stdout != "" {
					t.Fatalf("allow: exit %d stdout %q stderr %q; want exit 0 and no output", code, stdout, stderr)
				}
			case tc.exitCode:
				if code != 2 || stdout != "" || !strings.Contains(stderr, tc.deny) {
					t.Fatalf("deny with --exit-code: exit %d stdout %q stderr %q; want exit 2, reason ~%q on stderr", code, stdout, stderr, tc.deny)
				}
			default:
				if code != 0 {
					t.Fatalf("deny: exit %d, want 0 (stderr %q)", code, stderr)
				}
				var d struct {
					HookSpecificOutput struct {
						HookEventName            string `json:"hookEventName"`
						PermissionDecision       string `json:"permissionDecision"`
						PermissionDecisionReason string `json:"permissionDecisionReason"`
					} `json:"hookSpecificOutput"`
				}
				dec := json.NewDecoder(strings.NewReader(stdout))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&d); err != nil || dec.More() || strings.Count(stdout, "\n") != 1 {
					t.Fatalf("stdout is not exactly one deny decision: %q (%v)", stdout, err)
				}
				h := d.HookSpecificOutput
				if h.HookEventName != "PreToolUse" || h.PermissionDecision != "deny" || !strings.Contains(h.PermissionDecisionReason, tc.deny) {
					t.Fatalf("decision %+v; want a PreToolUse deny with reason ~%q", h, tc.deny)
				}
			}
		})
	}
}

// TestHookDeniesWhenInputNeverEnds: a hook whose input never ends is
// denied within --timeout instead of leaving the agent CLI to time out and
// allow.
func TestHookDeniesWhenInputNeverEnds(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	cmd := exec.Command(testutil.Toolhost(t), "hook", "pretooluse", "--agent", "devloop-coder", "--project-dir", proj, "--timeout", "300ms")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = in.Write([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls`))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("hook exit: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("hook answered after %v, want about 300ms", took)
	}
	if !strings.Contains(out.String(), `"permissionDecision":"deny"`) || !strings.Contains(out.String(), "no decision within 300ms") {
		t.Fatalf("stdout %q, want a deny for the timeout", out.String())
	}
}
