package triage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/bugs"
)

func TestExtractEvidence(t *testing.T) {
	t.Parallel()
	type want struct {
		status   string
		verified []VerifiedItem // kind, path, line compared; excerpt must contain Excerpt
		missing  []MissingItem  // kind compared; reason must contain Reason
	}
	tests := []struct {
		name string
		bug  string
		want want
	}{
		{"failing test in the cited report, and the test file", "BUG-0001", want{status: statusVerified, verified: []VerifiedItem{
			{Kind: kindTest, Path: "reports/vitest-2.json", Line: 10, Excerpt: "AssertionError: expected false to be true"},
			{Kind: kindTestFile, Path: "units/todo-be/tests/todos.test.js", Line: 10, Excerpt: "expect(t.done).toBe(true);"},
		}}},
		{"log excerpt near its cited line, with the lines around it", "BUG-0002", want{status: statusVerified, verified: []VerifiedItem{
			{Kind: kindLog, Path: "integration/logs/todo-be.err.log", Line: 6, Excerpt: "      ^\n\nError: listen EADDRINUSE: address already in use :::38124\n    at Server.setupListenHandle"},
		}}},
		{"failed step of the cited case run", "BUG-0003", want{status: statusVerified, verified: []VerifiedItem{
			{Kind: kindRunStep, Path: "integration/runs/run-0001.json", Line: 15, Excerpt: `step "get todo" failed: status 404`},
		}}},
		{"uncited report: the newest report naming the test", "BUG-0004", want{status: statusVerified, verified: []VerifiedItem{
			{Kind: kindTest, Path: "reports/vitest-2.json", Line: 18, Excerpt: "failed: todos answers within budget"},
			{Kind: kindTestFile, Path: "units/todo-be/tests/todos.test.js", Line: 18, Excerpt: "expect(flip).toBe(true);"},
		}}},
		{"suite that failed to import", "BUG-0006", want{status: statusVerified, verified: []VerifiedItem{
			{Kind: kindTest, Path: "units/todo-be/reports/vitest-deps.json", Excerpt: "Cannot find package 'slugify-lite'"},
			{Kind: kindTestFile, Path: "units/todo-be/t2/import.test.js", Excerpt: "lines"},
		}}},
		{"fabricated and misplaced citations", "BUG-0008", want{status: statusUnverified, missing: []MissingItem{
			{Kind: kindLog, Reason: `the quoted text "Error: connect to postgres failed: too many clients" is not in integration/logs/todo-be.err.log`},
			{Kind: kindLog, Reason: "is at line 6 of integration/logs/todo-be.err.log, not within ±5 lines of the cited line 40"},
			{Kind: kindLogFile, Reason: "file does not exist"},
			{Kind: kindRun, Reason: "cannot read integration/runs/run-9999.json: file does not exist"},
			{Kind: kindTest, Reason: `report reports/vitest-2.json has no test "todos deletes a todo"; failing tests there: "todos marks a todo done"`},
			{Kind: kindReport, Reason: "file does not exist"},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := copyProject(t)
			out, err := extractEvidence(context.Background(), newCtx(t, dir), ExtractEvidenceInput{BugID: tt.bug})
			if err != nil {
				t.Fatal(err)
			}
			if !out.OK || out.EvidenceStatus != tt.want.status {
				t.Errorf("ok=%v status=%q, want ok and %q", out.OK, out.EvidenceStatus, tt.want.status)
			}
			if len(out.Verified) != len(tt.want.verified) || len(out.Missing) != len(tt.want.missing) {
				t.Fatalf("got %d verified, %d missing; want %d, %d\n%+v\n%+v", len(out.Verified), len(out.Missing),
					len(tt.want.verified), len(tt.want.missing), out.Verified, out.Missing)
			}
			for i, w := range tt.want.verified {
				g := out.Verified[i]
				if g.Kind != w.Kind || g.Path != w.Path || g.Line != w.Line || !strings.Contains(g.Excerpt, w.Excerpt) {
					t.Errorf("verified[%d] = %+v\nwant kind %s path %s line %d excerpt containing %q", i, g, w.Kind, w.Path, w.Line, w.Excerpt)
				}
			}
			for i, w := range tt.want.missing {
				g := out.Missing[i]
				if g.Kind != w.Kind || !strings.Contains(g.Reason, w.Reason) {
					t.Errorf("missing[%d] = %+v\nwant kind %s reason containing %q", i, g, w.Kind, w.Reason)
				}
			}
			var rec EvidenceRecord
			readJSON(t, dir, RecordPath(tt.bug), &rec)
			if rec.BugID != tt.bug || rec.Status != tt.want.status || len(rec.Verified) != len(out.Verified) || rec.CallID != "call-test" {
				t.Errorf("%s = %+v", RecordPath(tt.bug), rec)
			}
			var sum Summary
			readJSON(t, dir, SummaryPath, &sum)
			if e := sum.Bugs[tt.bug]; e == nil || e.Evidence != tt.want.status || e.EvidenceVerified != len(out.Verified) || e.EvidenceMissing != len(out.Missing) {
				t.Errorf("summary entry = %+v", e)
			}
		})
	}
}

func TestExtractEvidenceFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, bug, reason string
	}{
		{"bug cites nothing checkable", "BUG-0009", "no evidence cited: BUG-0009"},
		{"unknown bug", "BUG-0999", "no bug BUG-0999 in the project's bug tracker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := copyProject(t)
			_, err := extractEvidence(context.Background(), newCtx(t, dir), ExtractEvidenceInput{BugID: tt.bug})
			if r := failReason(t, err); !strings.Contains(r, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", r, tt.reason)
			}
			if _, err := os.Stat(filepath.Join(dir, "triage")); !os.IsNotExist(err) {
				t.Errorf("a failed call wrote triage/: %v", err)
			}
		})
	}
}

// A bug may cite anything; paths that leave the project are reported as
// missing, never read, and the summary already on disk keeps its entries.
func TestExtractEvidenceHostileCitations(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	c := newCtx(t, dir)
	if _, err := extractEvidence(context.Background(), c, ExtractEvidenceInput{BugID: "BUG-0001"}); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(dir), "secret.log")
	if err := os.WriteFile(outside, []byte("Error: listen EADDRINUSE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "integration", "logs", "link.err.log")); err != nil {
		t.Fatal(err)
	}
	bug := `{"id":"BUG-0042","title":"hostile","severity":"minor","status":"open","fingerprint":"x","history":[],"opened_by":"tester",
"evidence":[{"log":"root","log_file":"../../../../etc/passwd"},{"log":"root","log_file":"/etc/passwd"},
{"run_id":"../../etc/passwd"},{"log":"EADDRINUSE","log_file":"integration/logs/link.err.log"},{"test":"x","report":"bugs/../../x.json"},{"test_file":"../../../etc/passwd"}]}`
	if err := os.WriteFile(filepath.Join(dir, "bugs", "BUG-0042.json"), []byte(bug), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := extractEvidence(context.Background(), c, ExtractEvidenceInput{BugID: "BUG-0042"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Verified) != 0 || len(out.Missing) != 7 {
		t.Fatalf("verified %+v\nmissing %+v", out.Verified, out.Missing)
	}
	for _, m := range out.Missing {
		if !strings.Contains(m.Reason, "leaves the project dir") && !strings.Contains(m.Reason, "absolute") &&
			!strings.Contains(m.Reason, "not a run id") && !strings.Contains(m.Reason, "escapes") &&
			!strings.Contains(m.Reason, "outside the project dir") &&
			!strings.Contains(m.Reason, "has a test from ../../../etc/passwd") {
			t.Errorf("missing %+v", m)
		}
	}
	var sum Summary
	readJSON(t, dir, SummaryPath, &sum)
	if sum.Bugs["BUG-0001"] == nil || sum.Bugs["BUG-0042"] == nil || sum.Bugs["BUG-0042"].Evidence != statusUnverified {
		t.Errorf("summary lost or mis-recorded an entry: %+v", sum.Bugs)
	}
}

func TestVerifyEvidenceIsTheSameTool(t *testing.T) {
	t.Parallel()
	e, v := ExtractEvidence().Spec(), VerifyEvidence().Spec()
	if v.Name != "verify_evidence" || string(e.InputSchema) != string(v.InputSchema) || string(e.OutputSchema) != string(v.OutputSchema) {
		t.Errorf("verify_evidence differs from extract_evidence: %s vs %s", v.InputSchema, e.InputSchema)
	}
	dir := copyProject(t)
	res, err := VerifyEvidence().Call(context.Background(), newCtx(t, dir), []byte(`{"bug_id":"BUG-0002"}`))
	if err != nil || res.Failed || !strings.Contains(string(res.Structured), `"evidence_status":"verified"`) {
		t.Errorf("verify_evidence: %v %s", err, res.Structured)
	}
}

// A bug that cites only a test file is backed by that file's first failed
// test in the newest report, not by a passing one.
func TestExtractEvidenceTestFileOnly(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	writeBug(t, dir, bugs.Bug{ID: "BUG-0050", UnitID: "todo-be", Title: "todos suite fails", Evidence: []bugs.Evidence{{TestFile: "tests/todos.test.js"}}})
	out, err := extractEvidence(context.Background(), newCtx(t, dir), ExtractEvidenceInput{BugID: "BUG-0050"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Verified) != 2 || out.Verified[0].Path != "reports/vitest-2.json" || !strings.Contains(out.Verified[0].Excerpt, "failed: todos marks a todo done") {
		t.Errorf("%+v", out.Verified)
	}
}

// bug_open appends the evidence of every duplicate report, so one bug often
// cites the same test (or log line, or run) more than once. Each citation
// is checked and listed once, so the counts in triage.json mean citations,
// not reports.
func TestExtractEvidenceRepeatedCitations(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	log := bugs.Evidence{Log: "Error: listen EADDRINUSE: address already in use :::38124", LogFile: "integration/logs/todo-be.err.log", LogLine: 7}
	writeBug(t, dir, bugs.Bug{ID: "BUG-0051", UnitID: "todo-be", Title: "marks done", Evidence: []bugs.Evidence{
		{Test: "todos marks a todo done", Repro: "first report"},
		{Test: "todos marks a todo done", Repro: "second report", Log: log.Log, LogFile: log.LogFile, LogLine: log.LogLine},
		log,
		{RunID: "run-9999"},
		{RunID: "run-9999", Repro: "again"},
	}})
	out, err := extractEvidence(context.Background(), newCtx(t, dir), ExtractEvidenceInput{BugID: "BUG-0051"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := func(n int, kind func(i int) string) []string {
		var s []string
		for i := range n {
			s = append(s, kind(i))
		}
		return s
	}
	gotV := kinds(len(out.Verified), func(i int) string { return out.Verified[i].Kind })
	gotM := kinds(len(out.Missing), func(i int) string { return out.Missing[i].Kind })
	if strings.Join(gotV, ",") != kindTest+","+kindLog || strings.Join(gotM, ",") != kindRun {
		t.Errorf("verified %v, missing %v; want [test log] and [run]\n%+v\n%+v", gotV, gotM, out.Verified, out.Missing)
	}
}

// A run as run_case really writes it: steps carry index, method and url
// (name only when the case gave one), diff is a list of mismatches, error
// says why a step failed without one, and steps after a failure are
// skipped. The evidence names each failed step with its line and reasons
// in words, and leaves skipped steps out.
func TestExtractEvidenceRunCaseShape(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	run := `{
  "run_id": "todo-crud-20261130T061513.1Z",
  "case_id": "todo-crud",
  "ok": false,
  "steps": [
    {
      "index": 0,
      "method": "POST",
      "url": "http://127.0.0.1:4100/todos",
      "ok": true,
      "status": 201,
      "elapsed_ms": 3
    },
    {
      "index": 1,
      "method": "GET",
      "url": "http://127.0.0.1:4100/todos/t-1",
      "ok": false,
      "status": 200,
      "elapsed_ms": 1,
      "diff": [
        {
          "check": "json_subset",
          "pointer": "/done",
          "expected": true,
          "actual": false,
          "message": "/done: expected true, got false"
        }
      ]
    },
    {
      "index": 2,
      "name": "delete todo",
      "method": "DELETE",
      "url": "http://127.0.0.1:4100/todos/t-1",
      "ok": false,
      "elapsed_ms": 0,
      "error": "connect: connection refused"
    },
    {
      "index": 3,
      "method": "GET",
      "url": "http://127.0.0.1:4100/todos",
      "ok": false,
      "skipped": true,
      "elapsed_ms": 0
    }
  ]
}
`
	if err := os.WriteFile(filepath.Join(dir, "integration", "runs", "todo-crud-20261130T061513.1Z.json"), []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	writeBug(t, dir, bugs.Bug{ID: "BUG-0052", UnitID: "todo-be", Title: "todo not done", Evidence: []bugs.Evidence{{RunID: "todo-crud-20261130T061513.1Z"}}})
	out, err := extractEvidence(context.Background(), newCtx(t, dir), ExtractEvidenceInput{BugID: "BUG-0052"})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line    int
		excerpt string
	}{
		{15, "step 1 (GET http://127.0.0.1:4100/todos/t-1) failed: status 200; /done: expected true, got false (json_subset)"},
		{32, `step 2 "delete todo" (DELETE http://127.0.0.1:4100/todos/t-1) failed: connect: connection refused`},
	}
	if len(out.Verified) != len(want) || len(out.Missing) != 0 {
		t.Fatalf("verified %+v\nmissing %+v", out.Verified, out.Missing)
	}
	for i, w := range want {
		g := out.Verified[i]
		if g.Kind != kindRunStep || g.Line != w.line || g.Excerpt != w.excerpt {
			t.Errorf("verified[%d] = line %d %q\nwant line %d %q", i, g.Line, g.Excerpt, w.line, w.excerpt)
		}
	}
}
