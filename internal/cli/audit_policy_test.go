package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/cli"
)

func run(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = cli.Run(args, strings.NewReader(""), &o, &e)
	return o.String(), e.String(), code
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"tools":{"write_todolist":{"permission":"read"},"x":{"permission":"nope"}}}`)
	base := write("base.json", `{"tools":{"write_todolist":{"permission":"write"},"gone":{"permission":"read"}}}`)
	bad := write("bad.json", `{"tools":{"a":{"permission":"read","timeout_ms":"1s"}}}`)
	cases := []struct {
		name     string
		args     []string
		code     int
		want     []string
		wantErr  string
		dontWant string
	}{
		{"against the embedded default", []string{"policy", "check", good}, 0,
			[]string{"is valid: 2 tools", "versus the embedded default policy", "~ tool write_todolist: permission write → read",
				"- tool timeline_append", `! tool x: permission "nope" is not read, write or deny`}, "", ""},
		{"against a file", []string{"policy", "check", good, "--against", base}, 0,
			[]string{"~ tool write_todolist: permission write → read", "- tool gone", "+ tool x"}, "", "timeline_append"},
		{"policy alias", []string{"policy", "check", good, "--policy", base}, 0, []string{"- tool gone"}, "", ""},
		{"no changes", []string{"policy", "check", base, "--against", base}, 0, []string{"no changes"}, "", ""},
		{"invalid file", []string{"policy", "check", bad}, 2, nil, "bad.json: policy file: json: cannot unmarshal string", ""},
		{"missing file", []string{"policy", "check", filepath.Join(dir, "none.json")}, 2, nil, "no such file", ""},
		{"json", []string{"policy", "check", good, "--against", base, "--json"}, 0, []string{`{"op":"-","what":"tool","name":"gone"`}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := run(tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.wantErr) {
				t.Fatalf("exit %d stderr %q; want %d %q", code, errOut, tc.code, tc.wantErr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.dontWant != "" && strings.Contains(out, tc.dontWant) {
				t.Errorf("output has %q:\n%s", tc.dontWant, out)
			}
		})
	}
}

func TestAuditCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".toolhost"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var buf bytes.Buffer
	add := func(id, agent, tool string, status audit.Status, ms float64, age time.Duration) {
		b, _ := json.Marshal(audit.Row{TS: now.Add(-age), CallID: id, Agent: agent, Tool: tool, Status: status, DurationMS: ms,
			Error: map[bool]string{true: "", false: "went\nwrong"}[status == audit.StatusOK]})
		buf.Write(append(b, '\n'))
	}
	add("c1", "pm", "write_todolist", audit.StatusOK, 10, 2*time.Hour)
	add("c2", "pm", "write_todolist", audit.StatusOK, 30, time.Minute)
	add("c3", "coder", "timeline_append", audit.StatusTimeout, 100, time.Minute)
	add("c4", "coder", "timeline_append", audit.StatusOK, 5, time.Second)
	if err := os.WriteFile(filepath.Join(dir, audit.Path), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := func(out string) string {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var r audit.Row
			if json.Unmarshal([]byte(l), &r) == nil {
				got = append(got, r.CallID)
			}
		}
		return strings.Join(got, ",")
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"all", nil, "c1,c2,c3,c4"},
		{"tool", []string{"--tool", "timeline_append"}, "c3,c4"},
		{"status", []string{"--status", "ok"}, "c1,c2,c4"},
		{"agent", []string{"--agent", "devloop-pm"}, "c1,c2"},
		{"since", []string{"--since", "1h"}, "c2,c3,c4"},
		{"limit keeps the newest", []string{"--limit", "2"}, "c3,c4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := run(append([]string{"audit", "--project-dir", dir, "--json"}, tc.args...)...)
			if code != 0 || ids(out) != tc.want {
				t.Fatalf("exit %d %s; got %s want %s", code, errOut, ids(out), tc.want)
			}
		})
	}
	t.Run("table", func(t *testing.T) {
		t.Parallel()
		out, _, code := run("audit", "--project-dir", dir, "--status", "timeout")
		if code != 0 || !strings.Contains(out, "STATUS") || !strings.Contains(out, "went wrong") || strings.Count(out, "\n") != 2 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("stats", func(t *testing.T) {
		t.Parallel()
		out, _, code := run("audit", "stats", "--project-dir", dir, "--json")
		var a, b audit.ToolStats
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &a) != nil || json.Unmarshal([]byte(lines[1]), &b) != nil {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if a.Tool != "timeline_append" || a.Count != 2 || a.OK != 1 || a.Failed != 1 || a.P99MS != 100 ||
			b.Tool != "write_todolist" || b.Count != 2 || b.P50MS != 10 {
			t.Fatalf("stats %+v %+v", a, b)
		}
		table, _, _ := run("audit", "stats", "--project-dir", dir)
		if !strings.Contains(table, "P99_MS") || !strings.Contains(table, "write_todolist") {
			t.Fatalf("table:\n%s", table)
		}
	})
	t.Run("missing trail", func(t *testing.T) {
		t.Parallel()
		_, errOut, code := run("audit", "--project-dir", t.TempDir())
		if code != 1 || !strings.Contains(errOut, "no audit trail") {
			t.Fatalf("exit %d %s", code, errOut)
		}
	})
}

func TestApproveUsage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no id", []string{"approve", "--project-dir", "."}, "accepts 1 arg"},
		{"no project", []string{"approve", "cf-1"}, "--project-dir is required"},
		{"project missing", []string{"approve", "cf-1", "--project-dir", "/nonexistent/x"}, "is not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, errOut, code := run(tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d %q; want 2 %q", code, errOut, tc.want)
			}
		})
	}
}
