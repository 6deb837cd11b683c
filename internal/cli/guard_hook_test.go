package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// run runs the real binary with stdin and returns stdout, stderr and the
// exit code.
func runIn(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testutil.Toolhost(t), args...)
	// The hook reads the Claude CLI's user settings: not the tester's own.
	cmd.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run toolhost %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func TestGuardCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stderr string
	}{
		{name: "allowed arg", args: []string{"guard", `curl -d @body.json http://localhost:3000/x`}, code: 0},
		{name: "blocked arg", args: []string{"guard", `curl -d '{"a":1}' http://localhost:3000/x`}, code: 2,
			stderr: `echo '{"a":1}' > "$TMPDIR/x.json" && curl -d @"$TMPDIR/x.json" http://localhost:3000/x`},
		{name: "allowed stdin", args: []string{"guard"}, stdin: "awk '{print $1}' f | sort\n", code: 0},
		{name: "blocked stdin", args: []string{"guard"}, stdin: "echo '{\"a\":1}' | http POST :3000/x\n", code: 2, stderr: "Bash guard: blocked inline JSON handed to http"},
		{name: "unparsable", args: []string{"guard", `echo "unterminated`}, code: 2, stderr: "cannot be parsed"},
		{name: "too long on stdin", args: []string{"guard"}, stdin: strings.Repeat("x", 70000), code: 2, stderr: "over the 65536-byte limit"},
		{name: "two args is a usage error", args: []string{"guard", "a", "b"}, code: 2, stderr: "accepts at most 1 arg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runIn(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, empty stdout, stderr ~%q", code, stdout, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// hookPayload is what the Claude CLI sends to a PreToolUse hook.
func hookPayload(cwd, tool string, input map[string]any) string {
	b, _ := json.Marshal(map[string]any{
		"session_id":      "0b9c6e2a-5d2f-4c1e-9d0a-7f3e1a2b3c4d",
		"transcript_path": "/home/dev/.claude/projects/-work-proj/0b9c6e2a-5d2f-4c1e-9d0a-7f3e1a2b3c4d.jsonl",
		"cwd":             cwd,
		"permission_mode": "default",
		"hook_event_name": "PreToolUse",
		"tool_name":       tool,
		"tool_input":      input,
		"tool_use_id":     "toolu_01ABCdef234",
	})
	return string(b)
}

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
		{name: "bash allowed", stdin: hookPayload(proj, "Bash", map[string]any{"command": "npm test -- --reporter=json > report.json", "description": "run tests"}), rewritten: true},
		{name: "bash inline json", stdin: hookPayload(proj, "Bash", map[string]any{"command": `curl -X POST -d '{"title":"x"}' http://localhost:3000/todos`}),
			deny: `echo '{"title":"x"}' > "$TMPDIR/x.json" && curl -X POST -d @"$TMPDIR/x.json" http://localhost:3000/todos`},
		{name: "bash inline json exit code mode", stdin: hookPayload(proj, "Bash", map[string]any{"command": `bash -c "http POST :3000 a:='[1]'"`}),
			deny: "Bash guard", exitCode: true},
		{name: "write in allow-list", stdin: hookPayload(proj, "Write", map[string]any{"file_path": in("units/todo-be/src/index.ts"), "content": "export {}\n"})},
		{name: "edit relative to cwd", stdin: hookPayload(in("units/todo-be"), "Edit", map[string]any{"file_path": "src/index.ts", "old_string": "a", "new_string": "b"})},
		{name: "notebook edit", stdin: hookPayload(proj, "NotebookEdit", map[string]any{"notebook_path": in("units/todo-be/n.ipynb"), "new_source": "x"})},
		{name: "write another agent's tree", stdin: hookPayload(proj, "Write", map[string]any{"file_path": in("prd/index.html"), "content": "x"}),
			deny: "Sandbox violation: devloop-coder tried to write prd/index.html (allowed: units/**, agent-state/coder-*.json, memory/devloop/coder/**)"},
		{name: "write outside the project", stdin: hookPayload(proj, "Write", map[string]any{"file_path": "/etc/cron.d/x", "content": "x"}),
			deny: "outside the project dir"},
		{name: "dotdot out of the project", stdin: hookPayload(proj, "Edit", map[string]any{"file_path": in("units/../../x"), "old_string": "a", "new_string": "b"}),
			deny: "outside the project dir"},
		{name: "multiedit through symlink", stdin: hookPayload(proj, "MultiEdit", map[string]any{"file_path": in("units/todo-be/out/x.ts"), "edits": []any{}}),
			deny: "units/todo-be/out is a symlink"},
		{name: "dot directory", stdin: hookPayload(proj, "Write", map[string]any{"file_path": in("units/todo-be/.git/hooks/pre-commit"), "content": "x"}),
			deny: "dot-directory .git", exitCode: true},
		{name: "a store of toolhost's", stdin: hookPayload(proj, "Write", map[string]any{"file_path": in(".toolhost/units.json"), "content": "{}"}),
			flags: []string{"--agent", "devloop-integrator"}, deny: ".toolhost/units.json is toolhost's own store"},
		{name: "dotdot after a symlink", stdin: hookPayload(proj, "Write", map[string]any{"file_path": proj + "/units/todo-be/out/../src/x.ts", "content": "x"}),
			deny: `".."`},
		{name: "notebook path behind a file_path", stdin: hookPayload(proj, "NotebookEdit", map[string]any{"file_path": in("units/todo-be/src/a.ts"), "notebook_path": in("prd/n.ipynb"), "new_source": "x"}),
			deny: "tried to write prd/n.ipynb"},
		{name: "command key in another case", stdin: `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"curl -d '{\"a\":1}' http://x","COMMAND":"ls"}}`,
			deny: "Bash guard"},
		{name: "tool_name key in another case", stdin: `{"hook_event_name":"PreToolUse","tool_name":"Bash","Tool_Name":"Read","tool_input":{"command":"curl -d '{\"a\":1}' http://x"}}`,
			deny: "Bash guard"},
		{name: "file_path key in another case", stdin: `{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/etc/x","FILE_PATH":"units/x"}}`,
			deny: "outside the project dir"},
		{name: "read is not checked", stdin: hookPayload(proj, "Read", map[string]any{"file_path": "/etc/passwd"})},
		{name: "malformed json", stdin: `{"tool_name": "Bash", "tool_input": {"command": `, deny: "malformed hook input"},
		{name: "empty input", stdin: ``, deny: "malformed hook input"},
		{name: "trailing data", stdin: hookPayload(proj, "Bash", map[string]any{"command": "ls"}) + ` {"tool_name":"Bash"}`, deny: "malformed hook input"},
		{name: "not an object", stdin: `null`, deny: "malformed hook input"},
		{name: "missing command", stdin: hookPayload(proj, "Bash", map[string]any{"cmd": "ls"}), deny: "tool_input.command is missing"},
		{name: "command not a string", stdin: hookPayload(proj, "Bash", map[string]any{"command": []string{"ls"}}), deny: "tool_input.command is not a string (an array)"},
		{name: "command null", stdin: hookPayload(proj, "Bash", map[string]any{"command": nil}), deny: "tool_input.command is not a string (null)"},
		{name: "command a number", stdin: hookPayload(proj, "Bash", map[string]any{"command": 7}), deny: "tool_input.command is not a string (a number)"},
		{name: "command an object", stdin: hookPayload(proj, "Bash", map[string]any{"command": map[string]any{"a": 1}}), deny: "tool_input.command is not a string (an object)", exitCode: true},
		{name: "tool_input null", stdin: `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":null}`, deny: "tool_input.command is missing"},
		{name: "bash with an unknown agent", stdin: hookPayload(proj, "Bash", map[string]any{"command": "ls"}),
			flags: []string{"--agent", "devloop-nobody"}, deny: "unknown agent"},
		// No agent named, none in the payload (the main thread) and no
		// --lead: toolhost decides nothing (hook_agent_test.go).
		{name: "bash without an agent", stdin: hookPayload(proj, "Bash", map[string]any{"command": "ls"}),
			flags: []string{"--agent="}},
		{name: "bash without a project dir", stdin: hookPayload(proj, "Bash", map[string]any{"command": "ls"}),
			flags: []string{"--project-dir="}, deny: "--project-dir (or TOOLHOST_PROJECT_DIR) is required"},
		{name: "bash with a missing project dir", stdin: hookPayload(proj, "Bash", map[string]any{"command": "ls"}),
			flags: []string{"--project-dir", filepath.Join(proj, "nope")}, deny: "is not usable", exitCode: true},
		{name: "read with an unknown agent", stdin: hookPayload(proj, "Read", map[string]any{"file_path": in("units/x")}),
			flags: []string{"--agent", "devloop-nobody"}, deny: "unknown agent"},
		{name: "bash over the guard's budget", stdin: hookPayload(proj, "Bash", map[string]any{"command": "a=xxxxxxxx; " + strings.Repeat("a=$a$a; ", 30)}),
			deny: "a word expands to more than"},
		{name: "bash with a dynamic client", stdin: hookPayload(proj, "Bash", map[string]any{"command": `"$(cat p)" -d '{"a":1}' http://x`}),
			deny: "Instead: write the program's name literally"},
		{name: "missing file_path", stdin: hookPayload(proj, "Write", map[string]any{"content": "x"}), deny: "has no file_path"},
		{name: "no tool name", stdin: `{"hook_event_name":"PreToolUse","tool_input":{}}`, deny: "no tool_name"},
		{name: "wrong event", stdin: strings.Replace(hookPayload(proj, "Bash", map[string]any{"command": "ls"}), `"hook_event_name":"PreToolUse"`, `"hook_event_name":"PostToolUse"`, 1), deny: "only handles PreToolUse"},
		{name: "unknown agent", stdin: hookPayload(proj, "Write", map[string]any{"file_path": in("units/x"), "content": "x"}),
			flags: []string{"--agent", "devloop-nobody"}, deny: "unknown agent"},
		{name: "missing project dir", stdin: hookPayload(proj, "Write", map[string]any{"file_path": in("units/x"), "content": "x"}),
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
			stdout, stderr, code := runIn(t, tc.stdin, args...)
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
