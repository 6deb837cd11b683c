package cli

import (
	"bytes"
	"strings"
	"testing"
)

// toolhost call's exit code tells a script what happened: 0 done, 1 the tool
// could not (ok: false, result still printed), 2 a gate refused the call.
func TestCallExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"done", []string{"call", "timeline_append", "--agent", "tester", "--args", `{"kind":"cli.call","message":"x"}`}, 0, `"ok": true`, ""},
		{"ok false", []string{"call", "update_todo_item", "--agent", "tester", "--args", `{"id":"step-001","status":"done"}`}, 1, `"ok": false`, "update_todo_item: ok: false: "},
		{"schema refusal", []string{"call", "timeline_append", "--agent", "tester", "--args", `{"kind":"Bad Kind","message":"x"}`}, 2, "", "rejected/validation"},
		{"policy refusal", []string{"call", "bootstrap_prd_site", "--agent", "tester", "--args", `{}`}, 2, "", "rejected/policy"},
		{"unknown tool", []string{"call", "no_such_tool", "--agent", "tester"}, 2, "", `unknown tool "no_such_tool"; toolhost tools list shows the tools (--agent devloop-tester`},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		args := append(tc.args, "--project-dir", dir)
		code := Run(args, strings.NewReader(""), &out, &errb)
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("%s: exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout with %q, stderr with %q", tc.name, code, tc.code, out.String(), errb.String(), tc.stdout, tc.stderr)
		}
	}
}
