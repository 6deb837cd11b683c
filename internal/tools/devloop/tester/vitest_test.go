package tester

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

const fixtureRoot = "/project/units/todo-be/src/"

// mixedFailures is what the mixed suite (scripts/gen-vitest-fixtures.sh)
// must yield, in report order, with or without --includeTaskLocation.
var mixedFailures = []Failure{
	{File: fixtureRoot + "broken-import.test.ts", Kind: KindSuiteError, Message: "Cannot find module './does-not-exist' imported from '/project/units/todo-be/src/broken-import.test.ts'"},
	{File: fixtureRoot + "errors.test.ts", Name: "error handling reads the title of a missing todo", Kind: KindTypeError, Message: "TypeError: Cannot read properties of undefined (reading 'title')", Line: 6},
	{File: fixtureRoot + "errors.test.ts", Name: "error handling calls an undefined helper", Kind: KindReferenceError, Message: "ReferenceError: formatTodo is not defined", Line: 11},
	{File: fixtureRoot + "errors.test.ts", Name: "error handling matches the stored snapshot", Kind: KindSnapshot, Message: "Error: Snapshot `error handling > matches the stored snapshot 1` mismatched", Line: 15},
	{File: fixtureRoot + "slow.test.ts", Name: "answers before the deadline", Kind: KindTimeout, Message: "Test timed out (Vitest's JSON report shows a timeout as STACK_TRACE_ERROR)", Line: 3},
	{File: fixtureRoot + "todos.test.ts", Name: "todos countOpen counts only open todos", Kind: KindAssertion, Message: "AssertionError: expected 2 to be 1 // Object.is equality", Line: 12},
	{File: fixtureRoot + "todos.test.ts", Name: "todos countOpen with nested filters matches the expected shape", Kind: KindAssertion, Message: "AssertionError: expected { id: '3', title: 'c', done: false } to deeply equal { id: '3', title: 'c', done: true }", Line: 21},
}

func TestParseVitestOnEveryCommittedReport(t *testing.T) {
	t.Parallel()
	want := map[string]ParseVitestOutput{
		"mixed.json":         {Total: 11, Passed: 3, Failed: 6, Skipped: 1, Todo: 1, SuiteErrors: 1, Failures: mixedFailures},
		"mixed-located.json": {Total: 11, Passed: 3, Failed: 6, Skipped: 1, Todo: 1, SuiteErrors: 1, Failures: mixedFailures},
		"passing.json":       {Total: 4, Passed: 4, Failures: []Failure{}},
	}
	reports, err := filepath.Glob(filepath.Join(testutil.RepoRoot(t), "testdata", "vitest", "*.json"))
	if err != nil || len(reports) == 0 {
		t.Fatalf("no committed reports in testdata/vitest (run scripts/gen-vitest-fixtures.sh): %v", err)
	}
	for _, path := range reports {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, ok := want[name]
			if !ok {
				t.Fatalf("testdata/vitest/%s has no expected counts here; add them", name)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c := newCtx(t, "tester", "todo-be")
			writeProjectFile(t, c, "reports/"+name, data)
			got, res, err := call[ParseVitestOutput](t, c, ParseVitest(), map[string]any{"report_path": "reports/" + name})
			if err != nil || res.Failed {
				t.Fatalf("parse_vitest: err %v, result %s", err, res.Structured)
			}
			if !got.OK || got.DurationMS <= 0 {
				t.Errorf("ok=%v duration_ms=%d, want ok and a positive duration", got.OK, got.DurationMS)
			}
			got.Status, got.DurationMS = w.Status, 0
			if !reflect.DeepEqual(got, w) {
				t.Errorf("got\n%+v\nwant\n%+v", got, w)
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
				},
			},
		}},
	}
	got, _, err := call[ParseVitestOutput](t, c, ParseVitest(), map[string]any{"report": report})
	if err != nil {
		t.Fatal(err)
	}
	wantF := []Failure{{File: "/p/src/a.test.ts", Name: "a colours", Kind: KindAssertion, Message: "AssertionError: expected 'x' to be 'y'", Line: 14}}
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
	want := []Failure{{File: "/p/a.test.ts", Kind: KindSuiteError, Message: "Error: db connection refused", Line: 3}}
	if err != nil || got.Passed != 1 || got.Failed != 0 || got.SuiteErrors != 1 || !reflect.DeepEqual(got.Failures, want) {
		t.Fatalf("a failing afterAll hook must show as a file-level error: %v %+v", err, got)
	}
}

func TestParseVitestRejectsBadInput(t *testing.T) {
	t.Parallel()
	mixed, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "testdata", "vitest", "mixed.json"))
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

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"AssertionError: expected 1 to be 2":                                           KindAssertion,
		"expected [ 1 ] to have length 2":                                              KindAssertion,
		"\x1b[31mTypeError: x is not a function\x1b[39m":                               KindTypeError,
		"ReferenceError: y is not defined":                                             KindReferenceError,
		"Error: Test timed out in 5000ms.":                                             KindTimeout,
		"Error: Hook timed out in 10000ms.":                                            KindTimeout,
		"Error: STACK_TRACE_ERROR":                                                     KindTimeout,
		"Error: Snapshot `a 1` mismatched":                                             KindSnapshot,
		"Error: Cannot find module './x' imported from '/a.ts'":                        KindImportError,
		"Failed to load url ./nope (resolved id: ./nope) in /a.ts":                     KindImportError,
		"SyntaxError: The requested module './a' does not provide an export named 'b'": KindImportError,
		"Error: boom": KindError,
	}
	for msg, want := range cases {
		if got := Classify(msg); got != want {
			t.Errorf("Classify(%q) = %s, want %s", msg, got, want)
		}
	}
}

// BenchmarkParseReport parses the committed mixed report (11 tests, 7
// failures) and builds its hints.
func BenchmarkParseReport(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(b), "testdata", "vitest", "mixed.json"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sum, err := ParseReport(data)
		if err != nil || len(BuildHints(sum.Failures)) != 6 {
			b.Fatal(err)
		}
	}
}
