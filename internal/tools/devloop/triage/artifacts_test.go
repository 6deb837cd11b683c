package triage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/crash"
	"github.com/toolhost/toolhost/internal/vitest/vitesttest"
)

// openBug files a bug through the store, as bug_open does.
func openBug(t *testing.T, dir, title string, ev bugs.Evidence) string {
	t.Helper()
	c := newCtx(t, dir)
	res, err := (&bugs.Store{Door: c.Shared}).Open(bugs.NewBug{Title: title, UnitID: "todo-be", Severity: "major", Evidence: ev, By: "tester", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Bug.ID
}

// TestTriageOnRealVitest: bugs citing the failures of the suite as each
// installed Vitest reported them — a failing beforeAll, a file that does not
// parse or load, a test that was only skipped, and the failures real suites
// produce most — are verified (or not) and classified with the evidence line
// the category rests on.
func TestTriageOnRealVitest(t *testing.T) {
	t.Parallel()
	type bugCase struct {
		title     string
		ev        bugs.Evidence
		evidence  string // evidence_status
		category  string
		rule      string
		v1Rule    string // the rule on Vitest 1, whose report keeps no stack
		v1Cat     string
		quoteLine string // the test-file line the evidence quotes
	}
	cases := []bugCase{
		{title: "orders tests cannot reach the database", ev: bugs.Evidence{TestFile: "src/orders.test.ts"}, evidence: statusVerified,
			category: CatEnvConfig, rule: "econnrefused", quoteLine: "beforeAll(async () => {"},
		{title: "listing orders does not run", ev: bugs.Evidence{Test: "lists orders", TestFile: "src/orders.test.ts"}, evidence: statusPartial},
		{title: "syntax test file does not parse", ev: bugs.Evidence{TestFile: "src/syntax.test.ts"}, evidence: statusVerified,
			category: CatTestError, rule: "syntax_error_in_test_file", quoteLine: "expect(1).toBe(1;"},
		{title: "broken import", ev: bugs.Evidence{TestFile: "src/broken-import.test.ts"}, evidence: statusVerified, category: CatLogicError, rule: "local_module_missing"},
		{title: "the API answer is a page", ev: bugs.Evidence{Test: "todos parses the API answer"}, evidence: statusVerified, category: CatContractMismatch, rule: "html_for_json"},
		{title: "slow answer", ev: bugs.Evidence{Test: "answers before the deadline"}, evidence: statusVerified, category: CatFlaky, rule: "timeout"},
		{title: "list shape changed", ev: bugs.Evidence{Test: "todos keeps the list shape"}, evidence: statusVerified, category: CatLogicError, rule: "snapshot_mismatch"},
		{title: "missing todo crashes titleOf", ev: bugs.Evidence{Test: "todos finds the title of a missing todo"}, evidence: statusVerified, category: CatLogicError, rule: "runtime_type_error"},
		{title: "formatTodo used but missing", ev: bugs.Evidence{Test: "todos formats a todo"}, evidence: statusVerified, category: CatTestError, rule: "error_in_test_file",
			v1Rule: "runtime_type_error", v1Cat: CatLogicError},
		{title: "countOpen counts done todos", ev: bugs.Evidence{Test: "todos counts only open todos"}, evidence: statusVerified, category: CatLogicError, rule: "assertion_expected_received"},
	}
	for _, major := range vitesttest.Versions {
		t.Run(fmt.Sprintf("vitest%d", major), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			run := vitesttest.RunUnit(t, major, dir, "todo-be")
			for _, tc := range cases {
				ev := tc.ev
				ev.Report = run.ReportRel
				id := openBug(t, dir, tc.title, ev)
				c := newCtx(t, dir)
				out, err := extractEvidence(context.Background(), c, ExtractEvidenceInput{BugID: id})
				if err != nil {
					t.Fatalf("%s: %v", tc.title, err)
				}
				if out.EvidenceStatus != tc.evidence {
					t.Errorf("%s: evidence %s (verified %+v, missing %+v), want %s", tc.title, out.EvidenceStatus, out.Verified, out.Missing, tc.evidence)
				}
				if tc.evidence == statusPartial {
					// The test file is there, but the skipped test is not
					// evidence of a failure: never a verified test item.
					if len(out.Missing) == 0 || !strings.Contains(out.Missing[0].Reason, "not reproduced") || !strings.Contains(out.Missing[0].Reason, "ECONNREFUSED") {
						t.Errorf("%s: missing %+v, want the skipped test not reproduced, pointing at its file's failing hook", tc.title, out.Missing)
					}
					for _, v := range out.Verified {
						if v.Kind == kindTest {
							t.Errorf("%s: a test that did not fail is verified: %+v", tc.title, v)
						}
					}
					continue
				}
				if tc.quoteLine != "" {
					var quoted bool
					for _, v := range out.Verified {
						if v.Kind == kindTestFile && strings.Contains(v.Excerpt, tc.quoteLine) && v.Line == vitesttest.LineOf(t, vitesttest.Suite, ev.TestFile, tc.quoteLine) {
							quoted = true
						}
					}
					if !quoted {
						t.Errorf("%s: verified %+v, want the test file quoted at %q", tc.title, out.Verified, tc.quoteLine)
					}
				}
				cl, err := classify(context.Background(), c, ClassifyInput{BugID: id})
				if err != nil {
					t.Fatal(err)
				}
				rule, cat := tc.rule, tc.category
				if major == 1 && tc.v1Rule != "" {
					rule, cat = tc.v1Rule, tc.v1Cat
				}
				var hit *Signal
				for i, s := range cl.Signals {
					if s.Rule == rule {
						hit = &cl.Signals[i]
					}
				}
				if cl.Category != cat || cl.Confidence <= 0 || hit == nil || !strings.HasPrefix(hit.Where, run.ReportRel) || hit.Excerpt == "" {
					t.Errorf("%s: %s (%.2f), signals %+v; want %s from rule %s on a line of %s", tc.title, cl.Category, cl.Confidence, cl.Signals, cat, rule, run.ReportRel)
				}
			}
			// A test the cited file does not have: the reason lists that
			// file's failures only.
			id := openBug(t, dir, "orders are listed twice", bugs.Evidence{Test: "orders lists orders twice", TestFile: "src/orders.test.ts", Report: run.ReportRel})
			out, err := extractEvidence(context.Background(), newCtx(t, dir), ExtractEvidenceInput{BugID: id})
			if err != nil || len(out.Missing) == 0 {
				t.Fatalf("%v %+v", err, out)
			}
			if r := out.Missing[0].Reason; !strings.Contains(r, "failing tests in src/orders.test.ts: ") || !strings.Contains(r, "orders.test.ts (outside any test: hook)") || strings.Contains(r, "todos") {
				t.Errorf("reason %q; want only the cited file's failures listed", r)
			}
		})
	}
}

// statusSuite is a Vitest suite whose test posts a todo to a real HTTP
// server that answers 200 where the contract says POST /todos → 201, and
// whose other test gets a status no contract declares.
var statusSuite = map[string]string{
	"package.json": `{ "name": "todo-be", "private": true, "type": "module" }` + "\n",
	"src/status.test.ts": `import { beforeAll, afterAll, it, expect } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let server: http.Server;
let base = '';

beforeAll(async () => {
  server = http.createServer((req, res) => { res.statusCode = 200; res.end('{}'); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = 'http://127.0.0.1:' + (server.address() as AddressInfo).port;
});
afterAll(() => { server.close(); });

it('POST /todos answers 201', async () => {
  const res = await fetch(base + '/todos', { method: 'POST', body: '{"title":"a"}' });
  expect(res.status).toBe(201);
});

it('brews coffee', async () => {
  const res = await fetch(base + '/coffee');
  expect(res.status).toBe(418);
});
`,
}

// TestClassifyStatusAgainstTheContract: a status assertion failed by a real
// server, in each Vitest's report, is a contract mismatch when the contract
// declares the expected status for that route, and stays a logic error
// when no contract declares it.
func TestClassifyStatusAgainstTheContract(t *testing.T) {
	t.Parallel()
	contract := `openapi: 3.1.0
info: { title: todos, version: '1' }
paths:
  /todos:
    get:
      responses: { '200': { description: the todos } }
    post:
      responses: { '201': { description: created } }
`
	for _, major := range vitesttest.Versions {
		t.Run(fmt.Sprintf("vitest%d", major), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"contracts/todos.yaml": contract})
			res := vitesttest.Run(t, major, filepath.Join(dir, "units", "todo-be"), statusSuite)
			writeTree(t, dir, map[string]string{"reports/status.json": string(res.Report)})
			for _, tc := range []struct{ test, category, rule string }{
				{"POST /todos answers 201", CatContractMismatch, "contract_status_declared"},
				{"brews coffee", CatLogicError, "assertion_expected_received"},
			} {
				id := openBug(t, dir, "status of "+tc.test, bugs.Evidence{Test: tc.test, Report: "reports/status.json"})
				out, err := classify(context.Background(), newCtx(t, dir), ClassifyInput{BugID: id})
				if err != nil {
					t.Fatal(err)
				}
				var rules []string
				for _, s := range out.Signals {
					rules = append(rules, s.Rule)
				}
				if out.Category != tc.category || !slices.Contains(rules, tc.rule) {
					t.Errorf("%q: %s by %v (%+v); want %s by %s", tc.test, out.Category, rules, out.Signals, tc.category, tc.rule)
				}
				if tc.category == CatLogicError && slices.Contains(rules, "contract_status_declared") {
					t.Errorf("%q: a status no contract declares voted contract_mismatch: %+v", tc.test, out.Signals)
				}
			}
		})
	}
}

// TestClassifyRealStderr: the text of real failures outside a Vitest report
// — crashed processes, tsc's errors, what Vitest printed for an unhandled
// rejection — classified as text.
func TestClassifyRealStderr(t *testing.T) {
	t.Parallel()
	inUse, _ := crash.NodeAddrInUse(t)
	tsc := tscOutput(t)
	vitestOut := vitesttest.Run(t, 3, t.TempDir(), vitesttest.UnhandledSuite).Console
	cases := []struct{ name, text, category, rule string }{
		{"node missing package", crash.NodeMissingModule(t), CatDependency, "module_not_found"},
		{"node port in use", inUse, CatEnvConfig, "eaddrinuse"},
		{"tsc TS2322", tsc, CatLogicError, "typescript_error"},
		{"vitest unhandled rejection", vitestOut, CatLogicError, "unhandled_rejection"},
		{"node unhandled rejection", crash.NodeUnhandledRejection(t), CatLogicError, "unhandled_rejection"},
		{"go panic in a goroutine", crash.GoPanic(t), CatLogicError, "runtime_panic"},
		{"go concurrent map writes", crash.GoConcurrentMapWrites(t), CatLogicError, "runtime_panic"},
		{"go net/http handler panic", crash.GoHTTPHandlerPanic(t, 1), CatLogicError, "runtime_panic"},
		{"rust panic", crash.RustPanic(t, false), CatLogicError, "runtime_panic"},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		out, err := classify(context.Background(), newCtx(t, dir), ClassifyInput{Text: tc.text})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range out.Signals {
			found = found || s.Rule == tc.rule && s.Excerpt != ""
		}
		if out.Category != tc.category || !found || out.Confidence <= 0 {
			t.Errorf("%s: %s (%.2f) signals %+v; want %s by %s in:\n%s", tc.name, out.Category, out.Confidence, out.Signals, tc.category, tc.rule, tc.text)
		}
	}
	// Nothing matches: unknown, with the nearest signature named.
	out, err := classify(context.Background(), newCtx(t, dir), ClassifyInput{Text: "Error: socket hang up\n    at connResetException (node:internal/errors:720:14)"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Category != CatUnknown || out.Confidence != 0 || !strings.Contains(out.Closest, "econnrefused") || !strings.Contains(out.Closest, "socket hang up") {
		t.Errorf("unknown text: %s, closest %q; want unknown naming econnrefused and the error line", out.Category, out.Closest)
	}
}

// tscOutput runs the real tsc --strict on a file with a type error.
func tscOutput(t *testing.T) string {
	t.Helper()
	tsc := testutil.NeedTool(t, "tsc", "TOOLHOST_TSC", "make deps (or bash scripts/deps/10-typescript.sh)")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "count.ts"), []byte("export const open: number = 'three';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tsc, "--strict", "--noEmit", "count.ts")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("tsc accepted a type error:\n%s", out)
	}
	return string(out)
}
