package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/vitest"
	"github.com/toolhost/toolhost/internal/vitest/vitesttest"
)

// The demo end to end against the real binary: six serve processes, the
// hook, the guard and the unit, into a project dir the test keeps.
func TestDemoEndToEnd(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	dir := filepath.Join(t.TempDir(), "project")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := Run(ctx, Options{Bin: bin, ProjectDir: dir, Out: &out, Progress: true})
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	text := out.String()

	if sum.ProjectDir != dir || !sum.Kept {
		t.Errorf("project dir %q kept %v; a given dir is kept", sum.ProjectDir, sum.Kept)
	}
	if sum.Servers != 6 {
		t.Errorf("%d toolhost serve processes, want one per agent (6)", sum.Servers)
	}
	if sum.Calls < 40 {
		t.Errorf("only %d tools/call made", sum.Calls)
	}
	if sum.AuditRows < sum.Calls || sum.AuditRejected != 2 {
		t.Errorf("audit rows %d (rejected %d) for %d calls; want one row per call, 2 rejected", sum.AuditRows, sum.AuditRejected, sum.Calls)
	}
	// One more line than rows: the record that starts the audit trail's
	// hash chain.
	if n := countLines(t, filepath.Join(dir, ".toolhost", "audit.ndjson")); n != sum.AuditRows+1 {
		t.Errorf("summary says %d audit rows, the file has %d lines (want the rows and the chain's start)", sum.AuditRows, n)
	}
	if sum.HookChecks != 3 || sum.GuardRuns != 2 {
		t.Errorf("%d hook checks, %d guard runs; want 3 and 2", sum.HookChecks, sum.GuardRuns)
	}

	wantRefusals := []struct{ agent, gate, msg string }{
		{"architect", "sandbox", "Sandbox violation: devloop-architect tried to write prd/stories.html"},
		{"coder", "policy", "tool write_chapter is not allowed for agent devloop-coder"},
		{"coder", "guard", "Bash guard: blocked inline JSON handed to curl via -d"},
	}
	if len(sum.Refused) != len(wantRefusals) {
		t.Fatalf("refusals %+v, want exactly %d", sum.Refused, len(wantRefusals))
	}
	for i, w := range wantRefusals {
		got := sum.Refused[i]
		if got.Agent != w.agent || got.Gate != w.gate || !strings.Contains(got.Message, w.msg) {
			t.Errorf("refusal %d = %+v, want %s by %s: %q", i, got, w.agent, w.gate, w.msg)
		}
	}

	for _, a := range []string{
		"prd/index.html", "prd/stories.html", "prd/mvcp/todo-list.html", "prd/search-index.json",
		"sdd/index.html", "sdd/api.html", "contracts/todo.json", "contracts/hashes.json",
		"units/todo-be/src/server.go", "units/todo-be/src/todo.gen.ts", "units/todo-be/src/todo_gen.go",
		"units/todo-be/coder-log.ndjson", "reports/vitest-todo.json", "triage/triage.json", "timeline.ndjson",
	} {
		if !slices.Contains(sum.Artifacts, a) {
			t.Errorf("artifact %s not reported", a)
		}
		if !exists(dir, a) {
			t.Errorf("artifact %s not on disk", a)
		}
	}
	if sum.PRDIndex != "file://"+filepath.ToSlash(filepath.Join(dir, "prd", "index.html")) {
		t.Errorf("PRD index %q", sum.PRDIndex)
	}
	if !strings.Contains(text, sum.PRDIndex) {
		t.Errorf("summary does not show the PRD site:\n%s", text)
	}

	// The Coder wrote the unit's real source; the Tester's report is the fixture.
	if b, _ := os.ReadFile(filepath.Join(dir, "units/todo-be/src/server.go")); !bytes.Equal(b, unitSource) {
		t.Error("units/todo-be/src/server.go is not unit.go")
	}

	// Bugs: two test failures and one file-level failure from the Tester,
	// one from the Integrator, triaged.
	if len(sum.Bugs) != 4 {
		t.Fatalf("bugs %v, want 4", sum.Bugs)
	}
	var hook struct {
		Evidence []struct {
			Test     string `json:"test"`
			TestFile string `json:"test_file"`
		} `json:"evidence"`
	}
	readJSON(t, filepath.Join(dir, "bugs", sum.Bugs[2]+".json"), &hook)
	if len(hook.Evidence) != 1 || hook.Evidence[0].Test != "" || !strings.HasSuffix(hook.Evidence[0].TestFile, "/orders.test.ts") {
		t.Errorf("the file-level bug = %+v; want it citing orders.test.ts and no test", hook)
	}
	var summary struct {
		Bugs map[string]struct {
			Category string `json:"category"`
			Evidence string `json:"evidence"`
		} `json:"bugs"`
	}
	readJSON(t, filepath.Join(dir, "triage", "triage.json"), &summary)
	if e := summary.Bugs[sum.Bugs[2]]; e.Category != "env_config" || e.Evidence != "verified" {
		t.Errorf("triage summary of the file-level bug = %+v; want env_config, verified", e)
	}
	var bug struct {
		Status   string `json:"status"`
		Evidence []struct {
			RunID string `json:"run_id"`
		} `json:"evidence"`
	}
	readJSON(t, filepath.Join(dir, "bugs", sum.Bugs[3]+".json"), &bug)
	if bug.Status != "triaged" || len(bug.Evidence) == 0 || bug.Evidence[0].RunID == "" {
		t.Errorf("integrator's bug = %+v; want triaged, citing the run", bug)
	}

	// The run: create and get passed, delete failed on status.
	var run struct {
		OK    bool `json:"ok"`
		Steps []struct {
			OK     bool `json:"ok"`
			Status int  `json:"status"`
		} `json:"steps"`
	}
	readJSON(t, filepath.Join(dir, sum.RunFile), &run)
	if run.OK || len(run.Steps) != 3 || !run.Steps[0].OK || !run.Steps[1].OK || run.Steps[2].OK || run.Steps[2].Status != 405 {
		t.Errorf("run file %s = %+v; want create, get ok and delete 405", sum.RunFile, run)
	}

	// The unit does not outlive the demo.
	var units struct {
		Units map[string]struct {
			State string `json:"state"`
			PGID  int    `json:"pgid"`
		} `json:"units"`
	}
	readJSON(t, filepath.Join(dir, ".toolhost", "units.json"), &units)
	u, ok := units.Units["todo-be"]
	if !ok || u.State != "stopped" || u.PGID <= 0 {
		t.Fatalf(".toolhost/units.json: %+v", units)
	}
	if err := syscall.Kill(-u.PGID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the unit's process group %d is still alive: %v", u.PGID, err)
	}

	// The timeline: every step passed, the refusals read as such, and the
	// long calls drew their progress on one updating line.
	// The one ✗ is the failed delete inside the run_case line.
	if strings.Count(text, "✗") != 1 || !strings.Contains(text, "delete ✗ status: expected 204, got 405") {
		t.Errorf("a step failed:\n%s", text)
	}
	for _, want := range []string{
		"[pm]          ✓ bootstrap_prd_site",
		"[coder]       ✓ refused as expected (policy): tool write_chapter is not allowed for agent devloop-coder",
		"[bug-triager] ✓ diff_contract_vs_impl    ",
		"[bug-triager] ✓ category_classifier hook env_config, confidence 0.80 (econnrefused@reports/vitest-todo.json",
		"missing DELETE /todos/{id}",
		"refused as expected  3: sandbox (architect), policy (coder), guard (coder)",
		"\r\033[K[integrator]  … run_case                 step 3/3 delete failed",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if sum.ProgressNotes < 5 {
		t.Errorf("%d progress notifications drawn; spawn_units, health_wait and run_case send at least 5", sum.ProgressNotes)
	}
}

// A step that does not do what it should stops the demo with an error
// naming it — here the PM's policy lacks write_mvcp_page — and the temp
// project is removed.
func TestDemoFailsNamingTheStep(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	agentsFile := agentsWithout(t, "devloop-pm", "write_mvcp_page")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := Run(ctx, Options{Bin: bin, AgentsFile: agentsFile, Out: &out})
	var se *StepError
	if !errors.As(err, &se) {
		t.Fatalf("want a *StepError, got %v\n%s", err, out.String())
	}
	if se.Agent != "pm" || se.Step != "write_mvcp_page" {
		t.Errorf("failed step [%s] %s, want [pm] write_mvcp_page", se.Agent, se.Step)
	}
	for _, want := range []string{"[pm] write_mvcp_page", "tool write_mvcp_page is not allowed for agent devloop-pm", "--keep"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(out.String(), "[pm]          ✗ write_mvcp_page") {
		t.Errorf("timeline lacks the failed step:\n%s", out.String())
	}
	if strings.Contains(out.String(), "[architect]") || strings.Contains(out.String(), "summary") {
		t.Errorf("the demo went on after a failed step:\n%s", out.String())
	}
	if sum == nil || sum.Kept || exists(sum.ProjectDir, "") {
		t.Errorf("the temp project dir was not removed: %+v", sum)
	}
}

func TestProjectDir(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	full := filepath.Join(base, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		o           Options
		wantDir     string
		wantCleanup bool
		wantErr     string
	}{
		{name: "temp removed", o: Options{}, wantCleanup: true},
		{name: "temp kept", o: Options{Keep: true}},
		{name: "empty dir kept", o: Options{ProjectDir: empty}, wantDir: empty},
		{name: "absent dir made", o: Options{ProjectDir: filepath.Join(base, "new", "p")}, wantDir: filepath.Join(base, "new", "p")},
		{name: "not empty", o: Options{ProjectDir: full}, wantErr: "is not empty"},
		{name: "not a dir", o: Options{ProjectDir: file}, wantErr: "not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, cleanup, err := projectDir(tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantDir != "" && dir != tc.wantDir {
				t.Errorf("dir %s, want %s", dir, tc.wantDir)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("%s is not a directory: %v", dir, err)
			}
			if (cleanup != nil) != tc.wantCleanup {
				t.Errorf("cleanup %v, want %v", cleanup != nil, tc.wantCleanup)
			}
			if cleanup != nil {
				if err := cleanup(); err != nil || exists(dir, "") {
					t.Errorf("cleanup left %s: %v", dir, err)
				}
			} else if tc.o.ProjectDir == "" {
				_ = os.RemoveAll(dir)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(full, "keep.txt")); err != nil || string(b) != "mine" {
		t.Errorf("a refused dir was touched: %q %v", b, err)
	}
}

var updateAsset = flag.Bool("update", false, "regenerate assets/vitest-report.json with the real Vitest")

// The report the Tester writes is what Vitest 3 reports for the suite of
// internal/vitest/vitesttest (with the temp paths rewritten to
// /project/units/todo-be and the refused port to 5432): this test runs
// Vitest and checks that the embedded report has the same failures, kinds
// and levels; with -update it writes the asset anew.
func TestVitestReportIsWhatVitestWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := vitesttest.RunUnit(t, 3, dir, "todo-be")
	text := string(run.Report)
	for _, root := range []string{filepath.Join(dir, "units", "todo-be"), dir} {
		text = strings.ReplaceAll(text, root, "/project/units/todo-be")
	}
	text = strings.ReplaceAll(text, filepath.Dir(vitesttest.NodeModules(t, 3)), "/project")
	text = strings.ReplaceAll(text, fmt.Sprintf("127.0.0.1:%d", run.DeadPort), "127.0.0.1:5432")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, []byte(text), "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	if *updateAsset {
		if err := os.WriteFile(filepath.Join("assets", "vitest-report.json"), pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	outline := func(data []byte) []string {
		r, err := vitest.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range r.Failures() {
			out = append(out, fmt.Sprintf("%s|%s|%s|%s|%d", path.Base(f.File), f.Test, f.Level, f.Kind, f.Line))
		}
		return append(out, fmt.Sprintf("total %d failed %d passed %d", r.Total, r.Failed, r.Passed))
	}
	if got, want := outline(vitestReport), outline(pretty.Bytes()); !slices.Equal(got, want) {
		t.Errorf("assets/vitest-report.json is not what Vitest 3 reports for the suite now; regenerate it with go test ./internal/demo -run TestVitestReportIsWhatVitestWrites -update\nasset:  %q\nvitest: %q", got, want)
	}
	if strings.Contains(string(vitestReport), "/tmp/") || !strings.Contains(string(vitestReport), "connect ECONNREFUSED 127.0.0.1:5432") {
		t.Error("the asset keeps a temp path, or lacks the beforeAll's refused connection")
	}
}

// agentsWithout writes the embedded agents file with tool removed from
// agent's toolPolicy.
func agentsWithout(t *testing.T, agent, tool string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(configs.AgentsJSON, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range doc["agents"].([]any) {
		am := a.(map[string]any)
		if am["name"] != agent {
			continue
		}
		cli := am["cli"].(map[string]any)
		var kept []any
		for _, p := range cli["toolPolicy"].([]any) {
			if p == tool {
				found = true
				continue
			}
			kept = append(kept, p)
		}
		cli["toolPolicy"] = kept
	}
	if !found {
		t.Fatalf("%s has no %s in its toolPolicy", agent, tool)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readJSON(t *testing.T, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}

func countLines(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// The caller's identity variables never reach the scripted agents; the
// rest of the environment (log settings, PATH) does.
func TestChildEnvDropsIdentity(t *testing.T) {
	t.Setenv("TOOLHOST_UNIT", "other-unit")
	t.Setenv("TOOLHOST_AGENT", "coder")
	t.Setenv("TOOLHOST_LOG_LEVEL", "debug")
	env := strings.Join(childEnv(), "\n")
	for _, gone := range []string{"TOOLHOST_UNIT=", "TOOLHOST_AGENT="} {
		if strings.Contains(env, gone) {
			t.Errorf("child env keeps %s", gone)
		}
	}
	if !strings.Contains(env, "TOOLHOST_LOG_LEVEL=debug") {
		t.Error("child env lost TOOLHOST_LOG_LEVEL")
	}
}
