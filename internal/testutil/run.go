package testutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Run runs the real binary once with stdin, the test's environment plus
// env, and a CLAUDE_CONFIG_DIR of its own (the hook reads the Claude CLI's
// user settings: not the tester's), and returns stdout, stderr and the exit
// code.
func Run(t testing.TB, stdin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(Toolhost(t), args...)
	cmd.Env = append(append(os.Environ(), "CLAUDE_CONFIG_DIR="+t.TempDir()), env...)
	return RunCommand(t, cmd, stdin)
}

// RunCommand runs cmd with stdin and returns stdout, stderr and the exit
// code; a command that cannot be run at all fails the test.
func RunCommand(t testing.TB, cmd *exec.Cmd, stdin string) (stdout, stderr string, code int) {
	t.Helper()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	return out.String(), errb.String(), code
}

// PreToolUsePayload is what the Claude CLI sends to a PreToolUse hook for a
// call of tool with input, made in cwd on the main thread.
func PreToolUsePayload(cwd, tool string, input map[string]any) string {
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
