package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// runEnv runs the toolhost binary with env added to the test's own, and
// no store or project id of the tester's.
func runEnv(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return testutil.Run(t, stdin, append([]string{"TOOLHOST_STORE=", "TOOLHOST_PID="}, env...), args...)
}

// TestHookAuditsIntoTheStore: the hook's decisions are rows of the
// project's store, chosen as every other command chooses it — --store and
// --pid, or TOOLHOST_STORE and TOOLHOST_PID (what a hook the CLI starts
// inherits) — and read back by `toolhost audit` from that store: the
// project dir's files, or a real PostgreSQL, where the rows are the
// project's tenant's and nothing is written to the project dir's trail.
func TestHookAuditsIntoTheStore(t *testing.T) {
	t.Parallel()
	const pid = "hook-store"
	for _, kind := range []string{"files", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			proj := t.TempDir()
			spec := "files"
			if kind == "postgres" {
				spec = pgtest.Start(t).CreateDB(t, "hooks")
			}
			deny := agentPayload(proj, "Write", map[string]any{"file_path": filepath.Join(proj, "prd/x.html"), "content": "x"}, "devloop-coder", "agent-7", "toolu_deny")
			allow := agentPayload(proj, "Bash", map[string]any{"command": "echo hi"}, "devloop-coder", "agent-7", "toolu_bash")
			// One hook given the store by its flags, one by the environment.
			if _, stderr, code := runEnv(t, nil, deny, "hook", "pretooluse", "--project-dir", proj, "--store", spec, "--pid", pid); code != 0 || strings.Contains(stderr, "audit_write_failed") {
				t.Fatalf("hook (flags): exit %d: %s", code, stderr)
			}
			if _, stderr, code := runEnv(t, []string{"TOOLHOST_STORE=" + spec, "TOOLHOST_PID=" + pid}, allow, "hook", "pretooluse", "--project-dir", proj); code != 0 || strings.Contains(stderr, "audit_write_failed") {
				t.Fatalf("hook (env): exit %d: %s", code, stderr)
			}
			out, stderr, code := runEnv(t, nil, "", "audit", "--project-dir", proj, "--store", spec, "--pid", pid, "--client-session", "sess-claude-1", "--json")
			if code != 0 {
				t.Fatalf("audit: exit %d: %s", code, stderr)
			}
			rows := map[string]map[string]any{}
			for line := range strings.Lines(out) {
				var r map[string]any
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("audit line %q: %v", line, err)
				}
				rows[r["tool_use_id"].(string)] = r
			}
			if len(rows) != 2 {
				t.Fatalf("audit of the CLI session: %d rows, want the 2 hook decisions:\n%s", len(rows), out)
			}
			for id, status := range map[string]string{"toolu_deny": "rejected", "toolu_bash": "ok"} {
				r := rows[id]
				if r["status"] != status || r["source"] != "hook" || r["pid"] != pid || r["agent"] != "coder" || r["client_agent_id"] != "agent-7" {
					t.Errorf("%s: row %v, want status %s, source hook, pid %s, agent coder, client_agent_id agent-7", id, r, status, pid)
				}
			}
			if _, stderr, code := runEnv(t, nil, "", "audit", "verify", "--project-dir", proj, "--store", spec, "--pid", pid); code != 0 {
				t.Errorf("audit verify: exit %d: %s", code, stderr)
			}
			_, err := os.Stat(filepath.Join(proj, ".toolhost/audit.ndjson"))
			switch {
			case kind == "files" && err != nil:
				t.Errorf("the file store's trail: %v", err)
			case kind == "postgres" && err == nil:
				t.Error("with a PostgreSQL store the hook also wrote the project dir's audit.ndjson")
			}
			if kind == "postgres" {
				// Another project's tenant in the same database sees none of them.
				out, stderr, code := runEnv(t, nil, "", "audit", "--project-dir", proj, "--store", spec, "--pid", "other", "--json")
				if code != 1 || strings.TrimSpace(out) != "" || !strings.Contains(stderr, "no audit trail") {
					t.Errorf("audit --pid other: exit %d, rows %q: %s (want exit 1: no audit trail)", code, out, stderr)
				}
			}
		})
	}
}
