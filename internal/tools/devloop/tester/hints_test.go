package tester

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

func TestHintBuilderOnMixedReport(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "testdata", "vitest", "mixed.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCtx(t, "tester", "todo-be")
	writeProjectFile(t, c, "reports/mixed.json", data)
	got, _, err := call[HintBuilderOutput](t, c, HintBuilder(), map[string]any{"report_path": "reports/mixed.json"})
	if err != nil || !got.OK {
		t.Fatalf("hint_builder: %v %+v", err, got)
	}
	// Two assertion failures in todos.test.ts share a cause and rank first;
	// then single-test causes, a file that cannot load before the others.
	type row struct {
		file, kind string
		tests      int
		says       string
	}
	want := []row{
		{"todos.test.ts", KindAssertion, 2, "returned 2 where the test expects 1"},
		{"broken-import.test.ts", KindImportError, 0, "import of ./does-not-exist fails"},
		{"errors.test.ts", KindReferenceError, 1, "formatTodo is used but not defined"},
		{"errors.test.ts", KindTypeError, 1, "reads .title of undefined"},
		{"slow.test.ts", KindTimeout, 1, "await every promise"},
		{"errors.test.ts", KindSnapshot, 1, "vitest run -u"},
	}
	if got.Failures != 7 || got.Groups != len(want) || len(got.Hints) != len(want) {
		t.Fatalf("failures=%d groups=%d hints=%d, want 7, %d, %d: %+v", got.Failures, got.Groups, len(got.Hints), len(want), len(want), got.Hints)
	}
	for i, w := range want {
		h := got.Hints[i]
		if !strings.HasSuffix(h.File, "/"+w.file) || h.Kind != w.kind || len(h.Tests) != w.tests || !strings.Contains(h.Hint, w.says) {
			t.Errorf("hint %d = %+v, want file %s kind %s with %d tests saying %q", i, h, w.file, w.kind, w.tests, w.says)
		}
	}
	for _, w := range []string{"## Hints for the coder (6 of 6)", "1. **assertion**", "   - todos countOpen counts only open todos"} {
		if !strings.Contains(got.Markdown, w) {
			t.Errorf("markdown lacks %q:\n%s", w, got.Markdown)
		}
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
