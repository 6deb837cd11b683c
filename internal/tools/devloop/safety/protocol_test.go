package safety_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

func serve(t *testing.T, proj string, args ...string) *stdioclient.Client {
	t.Helper()
	return testutil.Serve(t, append([]string{"--project-dir", proj, "--session", "sess-safety"}, args...)...)
}

type auditRow struct {
	Tool      string `json:"tool"`
	Status    string `json:"status"`
	ErrorKind string `json:"error_kind"`
	Error     string `json:"error"`
}

func auditRows(t *testing.T, proj string) []auditRow {
	t.Helper()
	f, err := os.Open(filepath.Join(proj, ".toolhost/audit.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []auditRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r auditRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestProtocol drives the real binary over stdio as a coder session: the
// bash tool runs in the unit's cwd, the engine's guard rejects inline JSON
// before the command runs (isError, audited as a guard rejection),
// sandbox_check answers like the sandbox, and a PM session cannot call bash.
func TestProtocol(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proj, "units/todo-be"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := serve(t, proj, "--agent", "coder", "--unit", "todo-be")

	cases := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		text    []string // substrings of the result text
	}{
		{name: "bash runs in the unit cwd", tool: "bash", args: map[string]any{"command": "pwd; echo hello"},
			text: []string{`"ok":true`, `units/todo-be\nhello\n`, `"exit_code":0`}},
		{name: "bash non-zero exit", tool: "bash", args: map[string]any{"command": "exit 7"},
			text: []string{`"ok":false`, `"exit_code":7`, `exit status 7`}},
		{name: "guard rejects inline JSON", tool: "bash", args: map[string]any{"command": `touch ran.txt && curl -d '{"a":1}' http://127.0.0.1:9/x`},
			isError: true, text: []string{"Bash guard: blocked inline JSON handed to curl via -d", `echo '{"a":1}' > "$TMPDIR/x.json" && curl -d @"$TMPDIR/x.json" http://127.0.0.1:9/x`}},
		{name: "schema rejects a huge timeout", tool: "bash", args: map[string]any{"command": "true", "timeout_ms": 700000},
			isError: true, text: []string{"timeout_ms"}},
		{name: "sandbox_check allowed", tool: "sandbox_check", args: map[string]any{"path": "units/todo-be/src/app.ts", "op": "write"},
			text: []string{`"allowed":true`, filepath.Join(proj, "units/todo-be/src/app.ts")}},
		{name: "sandbox_check refused", tool: "sandbox_check", args: map[string]any{"path": "prd/index.html"},
			text: []string{`"allowed":false`, "Sandbox violation: devloop-coder tried to write prd/index.html"}},
		{name: "sandbox_check read", tool: "sandbox_check", args: map[string]any{"path": "../secret", "op": "read"},
			text: []string{`"allowed":false`, "tried to read"}},
	}
	for _, tc := range cases {
		res := testutil.CallTool(t, c, tc.tool, tc.args)
		if res.IsError != tc.isError {
			t.Errorf("%s: isError = %v, want %v: %s", tc.name, res.IsError, tc.isError, res.Text())
		}
		for _, want := range tc.text {
			if !strings.Contains(res.Text(), want) && !strings.Contains(strings.ReplaceAll(res.Text(), `\n`, "\n"), want) {
				t.Errorf("%s: result %s does not contain %q", tc.name, res.Text(), want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(proj, "units/todo-be/ran.txt")); err == nil {
		t.Error("the guarded command ran (ran.txt exists)")
	}
	var guard *auditRow
	rows := auditRows(t, proj)
	for i := range rows {
		if rows[i].Tool == "bash" && rows[i].ErrorKind == "guard" {
			guard = &rows[i]
		}
	}
	if guard == nil || guard.Status != "rejected" || !strings.Contains(guard.Error, "Bash guard") {
		t.Errorf("no audit row for the guard rejection with status rejected: %+v", rows)
	}

	pm := serve(t, proj, "--agent", "pm", "--session", "sess-safety-pm")
	res := testutil.CallTool(t, pm, "bash", map[string]any{"command": "true"})
	if !res.IsError || !strings.Contains(res.Text(), "not allowed for agent") {
		t.Errorf("pm called bash: %s", res.Text())
	}
}
