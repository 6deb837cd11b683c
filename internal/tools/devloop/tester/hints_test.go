package tester

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/vitest/vitesttest"
)

// TestHintBuilderOnRealVitest: the hints for the suite's report, as each
// installed Vitest wrote it.
func TestHintBuilderOnRealVitest(t *testing.T) {
	t.Parallel()
	s := vitesttest.Suite
	for _, major := range vitesttest.Versions {
		t.Run(fmt.Sprintf("vitest%d", major), func(t *testing.T) {
			t.Parallel()
			c := newCtx(t, "tester", "todo-be")
			run := vitesttest.RunUnit(t, major, c.ProjectDir, "todo-be")
			got, _, err := call[HintBuilderOutput](t, c, HintBuilder(), map[string]any{"report_path": run.ReportRel, "max_hints": 100})
			if err != nil || !got.OK {
				t.Fatalf("hint_builder: %v %+v", err, got)
			}
			find := func(file, level, kind, test string) *Hint {
				for i, h := range got.Hints {
					if strings.HasSuffix(h.File, "/"+file) && h.Level == level && h.Kind == kind && (test == "" || len(h.Tests) == 1 && h.Tests[0] == test) {
						return &got.Hints[i]
					}
				}
				t.Errorf("no %s %s hint for %s %q in %+v", level, kind, file, test, got.Hints)
				return &Hint{}
			}
			// A file-level failure weighs as much as one test and comes
			// before a single test's failure: the files that do not load,
			// then the hooks.
			rank := map[string]int{"load": 0, "hook": 1, "test": 2}
			for i := 1; i < len(got.Hints); i++ {
				a, b := got.Hints[i-1], got.Hints[i]
				if len(a.Tests) <= 1 && len(b.Tests) <= 1 && rank[a.Level] > rank[b.Level] {
					t.Errorf("hint %d (%s) ranks before hint %d (%s)", i-1, a.Level, i, b.Level)
				}
			}
			hook := find("src/orders.test.ts", "hook", KindError, "")
			if !strings.Contains(hook.Hint, fmt.Sprintf("nothing listens at 127.0.0.1:%d", run.DeadPort)) || strings.Contains(hook.Hint, "syntax") {
				t.Errorf("beforeAll hint: %s; want the refused connection, not a syntax fix", hook.Hint)
			}
			if h := find("src/syntax.test.ts", "load", KindSyntaxError, ""); !strings.Contains(h.Hint, "does not parse") || h.Line != vitesttest.LineOf(t, s, "src/syntax.test.ts", "toBe(1;") {
				t.Errorf("syntax hint %+v", h)
			}
			find("src/broken-import.test.ts", "load", KindImportError, "")
			// Two snapshot mismatches are two hints, each at its own line.
			a := find("src/todos.test.ts", "test", KindSnapshot, "todos keeps the list shape")
			b := find("src/todos.test.ts", "test", KindSnapshot, "todos keeps the first todo")
			if a.Line != vitesttest.LineOf(t, s, "src/todos.test.ts", "todos.map((t) => t.id)") || b.Line != vitesttest.LineOf(t, s, "src/todos.test.ts", "expect(todos[0])") {
				t.Errorf("snapshot hints at lines %d and %d", a.Line, b.Line)
			}
			// Where the code under test threw, as well as the test line.
			te := find("src/todos.test.ts", "test", KindTypeError, "")
			thrown := vitesttest.Loc(t, s, "src/todos.ts", "(found as Todo).title")
			if major > 1 {
				if te.Thrown != c.ProjectDir+"/units/todo-be/"+thrown || !strings.Contains(te.Hint, thrown+" (called from ") {
					t.Errorf("TypeError hint %+v; want it attributed to %s", te, thrown)
				}
			} else if strings.Contains(te.Hint, "todos.test.ts:") {
				// Vitest 1 does not say which file threw: no test-file line.
				t.Errorf("Vitest 1 TypeError hint claims a test-file line: %s", te.Hint)
			}
			html := find("src/todos.test.ts", "test", KindSyntaxError, "")
			if !strings.Contains(html.Hint, "JSON.parse got HTML") {
				t.Errorf("HTML-for-JSON hint: %s", html.Hint)
			}
			if !strings.Contains(got.Markdown, "## Hints for the coder") {
				t.Errorf("markdown: %s", got.Markdown)
			}
		})
	}
}

func TestHintBuilderGroupsDedupesAndCuts(t *testing.T) {
	t.Parallel()
	same := "AssertionError: expected 500 to be 201 // Object.is equality"
	failures := []Failure{
		{File: "a.test.ts", Name: "one", Kind: KindAssertion, Message: same, Line: 9},
		{File: "a.test.ts", Name: "two", Kind: KindAssertion, Message: same, Line: 4},
		{File: "a.test.ts", Name: "three", Kind: KindAssertion, Message: "\x1b[31m" + same + "\x1b[39m", Line: 20},
		{File: "a.test.ts", Name: "four", Message: "TypeError: api.post is not a function"},
		{File: "b.test.ts", Name: "five", Kind: KindAssertion, Message: same},
		{File: "b.test.ts", Name: "six", Kind: KindError, Message: "Error: Test timed out in 5000ms."},
	}
	c := newCtx(t, "tester", "")
	got, _, err := call[HintBuilderOutput](t, c, HintBuilder(), map[string]any{"failures": failures, "max_hints": 2})
	if err != nil || !got.OK {
		t.Fatalf("%v %+v", err, got)
	}
	if got.Groups != 4 || len(got.Hints) != 2 {
		t.Fatalf("groups=%d hints=%d, want 4 groups cut to 2: %+v", got.Groups, len(got.Hints), got.Hints)
	}
	h := got.Hints[0]
	if h.File != "a.test.ts" || h.Kind != KindAssertion || strings.Join(h.Tests, ",") != "one,two,three" || h.Line != 4 {
		t.Errorf("first hint %+v, want a.test.ts assertion for one,two,three at line 4", h)
	}
	if strings.Contains(h.Hint, "other message") {
		t.Errorf("identical messages (one with colour codes) must merge: %s", h.Hint)
	}
	if !strings.Contains(h.Hint, "returned 500 where the test expects 201") {
		t.Errorf("hint does not say received vs expected: %s", h.Hint)
	}
	if got.Hints[1].Kind != KindTypeError || !strings.Contains(got.Hints[1].Hint, "api.post") {
		t.Errorf("second hint %+v, want the unkinded TypeError classified from its message", got.Hints[1])
	}
	if !strings.Contains(got.Markdown, "(2 of 4)") {
		t.Errorf("markdown must say the list was cut: %s", got.Markdown)
	}
}

func TestHintBuilderInputRules(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "")
	if _, _, err := call[HintBuilderOutput](t, c, HintBuilder(), map[string]any{}); err == nil || !strings.Contains(err.Error(), "give failures") {
		t.Errorf("no input: want a rejection naming failures/report_path, got %v", err)
	}
	if _, _, err := call[HintBuilderOutput](t, c, HintBuilder(), map[string]any{"failures": []any{}, "report_path": "r.json"}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("both inputs: want a rejection, got %v", err)
	}
	got, _, err := call[HintBuilderOutput](t, c, HintBuilder(), map[string]any{"failures": []any{}})
	if err != nil || !got.OK || len(got.Hints) != 0 || !strings.Contains(got.Markdown, "No failures") {
		t.Errorf("no failures: want ok with no hints, got %v %+v", err, got)
	}
}
