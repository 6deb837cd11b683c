package tester

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/vitest/vitesttest"
)

// TestParseVitestOnRealVitest: parse_vitest on the report each installed
// Vitest wrote for the suite, checked against what Vitest printed; every
// file-level failure is a failure with its own error.
func TestParseVitestOnRealVitest(t *testing.T) {
	t.Parallel()
	for _, major := range vitesttest.Versions {
		t.Run(fmt.Sprintf("vitest%d", major), func(t *testing.T) {
			t.Parallel()
			c := newCtx(t, "tester", "todo-be")
			run := vitesttest.RunUnit(t, major, c.ProjectDir, "todo-be")
			got, res, err := call[ParseVitestOutput](t, c, ParseVitest(), map[string]any{"report_path": run.ReportRel})
			if err != nil || res.Failed {
				t.Fatalf("parse_vitest: err %v, result %s", err, res.Structured)
			}
			printed := run.ConsoleCounts(t)
			if got.Total != printed.Total || got.Failed != printed.Failed || got.Passed != printed.Passed || got.Todo != printed.Todo || got.DurationMS <= 0 {
				t.Errorf("counts %+v; Vitest printed %+v", got, printed)
			}
			// broken-import, cache, orders, syntax, teardown fail outside any test.
			if got.SuiteErrors != 5 || len(got.Failures) != got.Failed+got.SuiteErrors {
				t.Errorf("suite_errors %d, %d failures for %d failed tests; want 5 file-level failures beside the tests", got.SuiteErrors, len(got.Failures), got.Failed)
			}
			var orders *Failure
			for i, f := range got.Failures {
				if strings.HasSuffix(f.File, "/src/orders.test.ts") {
					orders = &got.Failures[i]
				}
			}
			want := fmt.Sprintf("connect ECONNREFUSED 127.0.0.1:%d", run.DeadPort)
			if orders == nil || orders.Name != "" || orders.Level != "hook" || orders.Message != want {
				t.Errorf("orders.test.ts = %+v; want a hook failure saying %q", orders, want)
			}
			if !run.Printed(want) {
				t.Errorf("Vitest did not print %q", want)
			}
		})
	}
}

func TestParseVitestInlineReport(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "")
	report := map[string]any{
		"numTotalTests": 2, "startTime": 1000,
		"testResults": []any{map[string]any{
			"name": "/p/src/a.test.ts", "status": "failed", "startTime": 1000, "endTime": 1250.4,
			"assertionResults": []any{
				map[string]any{"fullName": "a works", "status": "passed", "failureMessages": []any{}},
				map[string]any{
					"ancestorTitles": []any{"a"}, "title": "colours", "status": "failed",
					"failureMessages": []any{"\n\x1b[31mAssertionError: expected \x1b[32m'x'\x1b[31m to be \x1b[31m'y'\x1b[39m\n    at helper (/p/src/helper.ts:9:3)"},
					"location":        map[string]any{"line": 14, "column": 3},
					"meta":            map[string]any{},
				},
			},
		}},
	}
	got, _, err := call[ParseVitestOutput](t, c, ParseVitest(), map[string]any{"report": report})
	if err != nil {
		t.Fatal(err)
	}
	wantF := []Failure{{File: "/p/src/a.test.ts", Name: "a colours", Level: "test", Kind: KindAssertion, Message: "AssertionError: expected 'x' to be 'y'", Line: 14, Thrown: "/p/src/helper.ts:9"}}
	if got.Total != 2 || got.Passed != 1 || got.Failed != 1 || got.DurationMS != 250 || !reflect.DeepEqual(got.Failures, wantF) {
		t.Errorf("got %+v, want 2 tests, 1 passed, 1 failed, 250 ms, failures %+v (ANSI stripped, no frame in the test file so location.line)", got, wantF)
	}
}

func TestParseVitestFileLevelErrorBesideTests(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "")
	report := map[string]any{"testResults": []any{map[string]any{
		"name": "/p/a.test.ts", "status": "failed", "message": "Error: db connection refused\n    at /p/a.test.ts:3:9",
		"assertionResults": []any{map[string]any{"fullName": "works", "status": "passed", "failureMessages": []any{}}},
	}}}
	got, _, err := call[ParseVitestOutput](t, c, ParseVitest(), map[string]any{"report": report})
	want := []Failure{{File: "/p/a.test.ts", Level: "hook", Kind: KindError, Message: "Error: db connection refused", Line: 3}}
	if err != nil || got.Passed != 1 || got.Failed != 0 || got.SuiteErrors != 1 || !reflect.DeepEqual(got.Failures, want) {
		t.Fatalf("a failing afterAll hook must show as a file-level error: %v %+v", err, got)
	}
}

func TestParseVitestRejectsBadInput(t *testing.T) {
	t.Parallel()
	mixed, err := json.MarshalIndent(syntheticReport(20), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		file      []byte // written to reports/r.json when set
		args      map[string]any
		rejection string // a Rejection's message contains this
		reason    string // an ok:false reason contains this
	}{
		{name: "truncated", file: mixed[:len(mixed)/2], reason: "truncated"},
		{name: "cut at a closing brace", file: mixed[:strings.LastIndex(string(mixed[:len(mixed)-10]), "}")+1], reason: "truncated"},
		{name: "empty file", file: []byte("  \n"), reason: "empty"},
		{name: "not JSON", file: []byte("PASS src/a.test.ts\n"), reason: "not JSON"},
		{name: "package.json", file: []byte(`{"name":"todo-be","scripts":{"test":"vitest"}}`), reason: "no testResults"},
		{name: "jest-ish without assertions", file: []byte(`{"testResults":[{"name":"a.test.ts"}]}`), reason: "testResults[0] lacks name or assertionResults"},
		{name: "wrong type", file: []byte(`{"testResults":{"a":1}}`), reason: "wrong type"},
		{name: "unknown status", file: []byte(`{"testResults":[{"name":"a","assertionResults":[{"status":"exploded"}]}]}`), reason: `status is "exploded"`},
		{name: "counts disagree", file: []byte(`{"numTotalTests":5,"testResults":[{"name":"a","assertionResults":[{"status":"passed"}]}]}`), reason: "numTotalTests is 5"},
		{name: "missing file", args: map[string]any{"report_path": "reports/nope.json"}, reason: "does not exist"},
		{name: "escape", args: map[string]any{"report_path": "../../etc/passwd"}, rejection: "stays inside"},
		{name: "absolute", args: map[string]any{"report_path": "/etc/passwd"}, rejection: "stays inside"},
		{name: "both", args: map[string]any{"report_path": "r.json", "report": map[string]any{}}, rejection: "not both"},
		{name: "neither", args: map[string]any{}, rejection: "give report_path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCtx(t, "tester", "")
			args := tc.args
			if tc.file != nil {
				writeProjectFile(t, c, "reports/r.json", tc.file)
				args = map[string]any{"report_path": "reports/r.json"}
			}
			got, res, err := call[ParseVitestOutput](t, c, ParseVitest(), args)
			if tc.rejection != "" {
				if err == nil || !strings.Contains(err.Error(), tc.rejection) {
					t.Fatalf("want a rejection containing %q, got err %v result %s", tc.rejection, err, res.Structured)
				}
				return
			}
			if err != nil || !res.Failed || got.OK || !strings.Contains(got.Reason, tc.reason) {
				t.Fatalf("want ok:false containing %q, got err %v result %s", tc.reason, err, res.Structured)
			}
		})
	}
}

// syntheticReport is a report of n tests, every third failing, in the
// shape Vitest 3 writes; for input checks and the benchmark, where the
// report's content does not matter.
func syntheticReport(n int) map[string]any {
	var tests []any
	for i := range n {
		a := map[string]any{"ancestorTitles": []any{"todos"}, "title": fmt.Sprintf("case %d", i), "fullName": fmt.Sprintf("todos case %d", i),
			"status": "passed", "duration": 1.5, "failureMessages": []any{}, "meta": map[string]any{}}
		if i%3 == 0 {
			a["status"] = "failed"
			// One throw site for every failure: the hints group them into one.
			a["failureMessages"] = []any{fmt.Sprintf("AssertionError: expected %d to be %d // Object.is equality\n    at /p/src/todos.ts:10:9\n    at /p/src/todos.test.ts:%d:21\n    at file:///p/node_modules/@vitest/runner/dist/index.js:1:1", i, i+1, i+3)}
		}
		tests = append(tests, a)
	}
	return map[string]any{"numTotalTests": n, "startTime": 1000, "success": false, "testResults": []any{map[string]any{
		"name": "/p/src/todos.test.ts", "status": "failed", "message": "", "startTime": 1000, "endTime": 1100, "assertionResults": tests,
	}}}
}

// BenchmarkParseReport parses a 300-test report and builds its hints.
func BenchmarkParseReport(b *testing.B) {
	data, err := json.Marshal(syntheticReport(300))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sum, err := ParseReport(data)
		if err != nil {
			b.Fatal(err)
		}
		if h := BuildHints(sum.Failures); len(h) != 1 {
			b.Fatalf("%d hints for 100 failures thrown at one site, want 1", len(h))
		}
	}
}

// TestParseVitestLargeReportIsBounded: a real Vitest report with 5,000
// failures (a regression that breaks most of a suite) comes back within the
// result budget: the totals whole, the failures grouped into their three
// causes with counts and examples, the first failures, and truncated with
// the next page and the file holding the whole result. The next page and
// the last fit too and repeat nothing (internal/tool's tests walk every
// page of such a result).
func TestParseVitestLargeReportIsBounded(t *testing.T) {
	t.Parallel()
	c := testutil.NewCtx(t, testutil.CtxOptions{Agent: "tester", AllowList: []string{"reports/**", "agent-state/tester-*.json"}})
	res := vitesttest.Run(t, 3, filepath.Join(c.ProjectDir, "units/cart"), vitesttest.LargeSuite(5000))
	if err := os.MkdirAll(filepath.Join(c.ProjectDir, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.ProjectDir, "reports/cart.json"), res.Report, 0o644); err != nil {
		t.Fatal(err)
	}
	pv := ParseVitest() // one instance, as a session's registry holds it
	page := func(n int) (ParseVitestOutput, tool.Result) {
		r, err := testutil.RunTool(t, context.Background(), c, pv, map[string]any{"report_path": "reports/cart.json", "page": n})
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		var out ParseVitestOutput
		if err := json.Unmarshal(r.Structured, &out); err != nil {
			t.Fatal(err)
		}
		if !r.Failed && len(r.Structured) > tool.ResultBudget {
			t.Fatalf("page %d is %d bytes, over the budget", n, len(r.Structured))
		}
		return out, r
	}
	first, r := page(1)
	tr := first.Truncated
	if first.Failed != 5000 || first.Passed != 50 || tr == nil || tr.NextPage != 2 || tr.Pages < 3 {
		t.Fatalf("page 1: failed %d passed %d, truncated %+v", first.Failed, first.Passed, tr)
	}
	counts := map[string]int{}
	for _, c := range first.Causes {
		counts[c.Kind] += c.Count
		if len(c.Examples) == 0 || len(c.Examples) > 3 {
			t.Errorf("cause %+v: want 1-3 examples", c)
		}
	}
	if len(first.Causes) != 3 || counts[KindAssertion] != 4000 || counts[KindTypeError] != 750 || counts[KindReferenceError] != 250 {
		t.Fatalf("causes %+v, want three: 4000 assertions, 750 TypeErrors, 250 ReferenceErrors", first.Causes)
	}
	var whole ParseVitestOutput
	b, err := os.ReadFile(filepath.Join(c.ProjectDir, tr.FullResult))
	if err != nil || json.Unmarshal(b, &whole) != nil || len(whole.Failures) != 5000 {
		t.Fatalf("full_result %s: %d failures, %v", tr.FullResult, len(whole.Failures), err)
	}
	second, _ := page(2)
	last, _ := page(tr.Pages)
	if len(first.Failures) == 0 || len(second.Failures) == 0 || second.Failures[0] != whole.Failures[len(first.Failures)] ||
		last.Truncated.NextPage != 0 || last.Failures[len(last.Failures)-1] != whole.Failures[4999] {
		t.Errorf("pages 1, 2 and %d do not follow the whole result: %d, %d failures", tr.Pages, len(first.Failures), len(second.Failures))
	}
	if _, r := page(tr.Pages + 1); !r.Failed {
		t.Errorf("a page past the last: %s", r.Structured)
	}
	t.Logf("5,000 failures: the whole result is %d bytes, page 1 %d bytes, %d pages", len(b), len(r.Structured), tr.Pages)
}

// TestParseVitestReadsAChangedReport: a report rewritten between two calls
// of one session's parse_vitest (the next run wrote it) is read anew, also
// when the new report has the same size as the old one; the old one
// written back is read again as it is.
func TestParseVitestReadsAChangedReport(t *testing.T) {
	t.Parallel()
	c := testutil.NewCtx(t, testutil.CtxOptions{Agent: "tester", AllowList: []string{"reports/**", "agent-state/tester-*.json"}})
	pv := ParseVitest()
	first := syntheticReport(300) // 100 failed
	second := syntheticReport(300)
	// "failed" and "passed" have the same length: only the content differs.
	second["testResults"].([]any)[0].(map[string]any)["assertionResults"].([]any)[0].(map[string]any)["status"] = "passed"
	third := syntheticReport(30)
	for i, tc := range []struct {
		report        map[string]any
		total, failed int
	}{{first, 300, 100}, {second, 300, 99}, {third, 30, 10}, {first, 300, 100}} {
		data, err := json.Marshal(tc.report)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(c.ProjectDir, "reports"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.ProjectDir, "reports/run.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, res, err := call[ParseVitestOutput](t, c, pv, map[string]any{"report_path": "reports/run.json"})
		if err != nil || res.Failed || got.Total != tc.total || got.Failed != tc.failed {
			t.Errorf("report %d: total %d failed %d (%v %s), want %d and %d", i, got.Total, got.Failed, err, res.Structured, tc.total, tc.failed)
		}
	}
}

// softSuite has a test whose two expect.soft assertions fail (and a third
// passes), and two tests of the same file failing different assertions; the
// config retries every test twice, so each error is raised on three tries.
var softSuite = map[string]string{
	"package.json":      `{ "name": "orders", "private": true, "type": "module" }` + "\n",
	"vitest.config.mjs": "export default { test: { include: ['src/**/*.test.ts'], retry: 2 } };\n",
	"src/order.test.ts": `import { it, expect } from 'vitest';

const order = { status: 'open', total: 3, items: ['a'] };

it('checks the order', () => {
  expect.soft(order.status).toBe('paid');
  expect.soft(order.total).toBe(5);
  expect.soft(order.items).toHaveLength(1);
});

it('names the customer', () => {
  expect('ann').toBe('bob');
});

it('counts the items', () => {
  expect(order.items).toHaveLength(2);
});
`,
}

// TestSoftAssertionsOnRealVitest: every expect.soft failure of a test is a
// failure of its own, at its own line; a retried assertion is one failure;
// two different assertions of one file are two hints, each naming its test.
func TestSoftAssertionsOnRealVitest(t *testing.T) {
	t.Parallel()
	for _, major := range vitesttest.Versions {
		t.Run(fmt.Sprintf("vitest%d", major), func(t *testing.T) {
			t.Parallel()
			c := newCtx(t, "tester", "orders")
			res := vitesttest.Run(t, major, c.ProjectDir+"/units/orders", softSuite)
			writeProjectFile(t, c, "reports/soft.json", res.Report)
			got, _, err := call[ParseVitestOutput](t, c, ParseVitest(), map[string]any{"report_path": "reports/soft.json"})
			if err != nil || !got.OK {
				t.Fatalf("parse_vitest: %v %+v", err, got)
			}
			var lines []string
			for _, f := range got.Failures {
				lines = append(lines, fmt.Sprintf("%s|%s|%d", f.Name, f.Message, f.Line))
			}
			want := []string{
				"checks the order|AssertionError: expected 'open' to be 'paid' // Object.is equality|" + fmt.Sprint(vitesttest.LineOf(t, softSuite, "src/order.test.ts", "order.status")),
				"checks the order|AssertionError: expected 3 to be 5 // Object.is equality|" + fmt.Sprint(vitesttest.LineOf(t, softSuite, "src/order.test.ts", "order.total")),
				"names the customer|AssertionError: expected 'ann' to be 'bob' // Object.is equality|" + fmt.Sprint(vitesttest.LineOf(t, softSuite, "src/order.test.ts", "'ann'")),
				"counts the items|AssertionError: expected [ 'a' ] to have a length of 2 but got 1|" + fmt.Sprint(vitesttest.LineOf(t, softSuite, "src/order.test.ts", "toHaveLength(2)")),
			}
			if major == 1 {
				// Vitest 1 keeps neither the class nor the stack: the
				// message alone, at the test's location.
				for i, w := range want {
					w = strings.Replace(w, "AssertionError: ", "", 1)
					want[i] = w[:strings.LastIndex(w, "|")]
				}
				for i, l := range lines {
					lines[i] = l[:strings.LastIndex(l, "|")]
				}
			}
			if got.Failed != 3 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("failed %d, failures:\n%s\nwant 3 failed tests and:\n%s", got.Failed, strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
			hints, _, err := call[HintBuilderOutput](t, c, HintBuilder(), map[string]any{"report_path": "reports/soft.json"})
			if err != nil || !hints.OK {
				t.Fatalf("hint_builder: %v %+v", err, hints)
			}
			says := map[string]string{"expects 'paid'": "checks the order", "expects 5": "checks the order", "expects 'bob'": "names the customer", "a length of 2": "counts the items"}
			if len(hints.Hints) != len(says) {
				t.Errorf("%d hints, want one per assertion: %+v", len(hints.Hints), hints.Hints)
			}
			for _, h := range hints.Hints {
				found := false
				for words, test := range says {
					if strings.Contains(h.Hint, words) {
						found = true
						if len(h.Tests) != 1 || h.Tests[0] != test {
							t.Errorf("hint %q names %q; the assertion is in %q", h.Hint, h.Tests, test)
						}
					}
				}
				if !found {
					t.Errorf("hint %q says none of the assertions", h.Hint)
				}
			}
		})
	}
}

// TestParseVitestEmptyReports: a report of no test file is never a run of
// 0 tests: an object with only testResults is not a report Vitest wrote,
// and a real run that matched no file failed; with passWithNoTests Vitest
// says the empty run passed, and so does parse_vitest.
func TestParseVitestEmptyReports(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "")
	_, res, err := call[ParseVitestOutput](t, c, ParseVitest(), map[string]any{"report": map[string]any{"testResults": []any{}}})
	if err != nil || !strings.Contains(string(res.Structured), "not a run") {
		t.Errorf(`{"testResults":[]}: %v %s; want ok:false saying it is not a run`, err, res.Structured)
	}
	for _, tc := range []struct {
		config string
		says   string // in the reason; "" for ok with 0 tests
	}{
		{"export default { test: { include: ['spec/**/*.test.ts'] } };\n", "found no test file"},
		{"export default { test: { include: ['spec/**/*.test.ts'], passWithNoTests: true } };\n", ""},
	} {
		res := vitesttest.Run(t, 3, t.TempDir(), map[string]string{"package.json": `{"type":"module"}`, "vitest.config.mjs": tc.config, "src/a.test.ts": "it('x', () => {});\n"})
		writeProjectFile(t, c, "reports/empty.json", res.Report)
		got, r, err := call[ParseVitestOutput](t, c, ParseVitest(), map[string]any{"report_path": "reports/empty.json"})
		switch {
		case err != nil:
			t.Fatal(err)
		case tc.says == "" && (!got.OK || got.Total != 0):
			t.Errorf("passWithNoTests: %s; want ok with 0 tests", r.Structured)
		case tc.says != "" && (got.OK || !strings.Contains(string(r.Structured), tc.says)):
			t.Errorf("no test file: %s; want ok:false saying %q", r.Structured, tc.says)
		}
	}
}
