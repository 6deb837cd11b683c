package vitest_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/vitest"
	"github.com/toolhost/toolhost/internal/vitest/vitesttest"
)

// want is one failure the suite must yield.
type want struct {
	file, test, level, kind string
	says                    string // part of Message
	line                    int    // line in the test file; -1: must be 0 on Vitest 1
	thrown                  string // "src/x.ts:N" where it was thrown (Vitest 2+)
}

// TestReaderOnRealVitest runs the suite with each installed Vitest and
// checks every failure the reader finds, against the report and against what
// Vitest printed.
func TestReaderOnRealVitest(t *testing.T) {
	t.Parallel()
	s := vitesttest.Suite
	at := func(rel, sub string) int { return vitesttest.LineOf(t, s, rel, sub) }
	todos := "src/todos.test.ts"
	wants := []want{
		{file: "src/broken-import.test.ts", level: vitest.LevelLoad, kind: vitest.KindImportError, says: "./does-not-exist"},
		{file: "src/cache.test.ts", level: vitest.LevelHook, kind: vitest.KindError, says: "JSON report carries no error"},
		{file: "src/orders.test.ts", level: vitest.LevelHook, kind: vitest.KindError, says: "connect ECONNREFUSED 127.0.0.1:"},
		{file: "src/slow.test.ts", test: "answers before the deadline", level: vitest.LevelTest, kind: vitest.KindTimeout, says: "imed out"},
		{file: "src/syntax.test.ts", level: vitest.LevelLoad, kind: vitest.KindSyntaxError, says: "Transform failed with 1 error: ", line: at("src/syntax.test.ts", "toBe(1;")},
		{file: "src/teardown.test.ts", level: vitest.LevelHook, kind: vitest.KindTypeError, says: "pool.close is not a function"},
		{file: todos, test: "todos counts only open todos", level: vitest.LevelTest, kind: vitest.KindAssertion, says: "expected 2 to be 1", line: at(todos, "countOpen(todos)).toBe(1)")},
		{file: todos, test: "todos finds the title of a missing todo", level: vitest.LevelTest, kind: vitest.KindTypeError, says: "Cannot read properties of undefined (reading 'title')",
			line: -at(todos, "titleOf(todos, '9')"), thrown: vitesttest.Loc(t, s, "src/todos.ts", "(found as Todo).title")},
		{file: todos, test: "todos parses the API answer", level: vitest.LevelTest, kind: vitest.KindSyntaxError, says: "Unexpected token '<'",
			line: -at(todos, "parseTodo('<!doctype"), thrown: vitesttest.Loc(t, s, "src/todos.ts", "JSON.parse(body)")},
		{file: todos, test: "todos notifies the listener", level: vitest.LevelTest, kind: vitest.KindTypeError, says: "is not a function",
			line: -at(todos, "    notify();"), thrown: vitesttest.Loc(t, s, "src/todos.ts", "(cb as () => void)()")},
		{file: todos, test: "todos formats a todo", level: vitest.LevelTest, kind: vitest.KindReferenceError, says: "formatTodo is not defined", line: -at(todos, "expect(formatTodo(")},
		{file: todos, test: "todos keeps the list shape", level: vitest.LevelTest, kind: vitest.KindSnapshot, says: "keeps the list shape 1` mismatched", line: at(todos, "todos.map((t) => t.id)")},
		{file: todos, test: "todos keeps the first todo", level: vitest.LevelTest, kind: vitest.KindSnapshot, says: "keeps the first todo 1` mismatched", line: at(todos, "expect(todos[0])")},
	}
	for _, major := range vitesttest.Versions {
		t.Run(fmt.Sprintf("vitest%d", major), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			port := vitesttest.DeadPort(t)
			res := vitesttest.Run(t, major, dir, s, fmt.Sprintf("PGPORT=%d", port))
			run, err := vitest.Parse(res.Report)
			if err != nil {
				t.Fatal(err)
			}
			printed := res.ConsoleCounts(t)
			if run.Total != printed.Total || run.Failed != printed.Failed || run.Passed != printed.Passed || run.Todo != printed.Todo {
				t.Errorf("counts %d total, %d failed, %d passed, %d todo; Vitest printed %+v", run.Total, run.Failed, run.Passed, run.Todo, printed)
			}
			// Vitest 1 prints tests of a file whose beforeAll failed as
			// neither skipped nor failed; the report has them "pending".
			if major > 1 && run.Skipped != printed.Skipped {
				t.Errorf("skipped %d, Vitest printed %d", run.Skipped, printed.Skipped)
			}
			fs := run.Failures()
			if len(fs) != len(wants) {
				for _, f := range fs {
					t.Logf("%+v", *f)
				}
				t.Fatalf("%d failures, want %d", len(fs), len(wants))
			}
			for i, w := range wants {
				f := fs[i]
				where := fmt.Sprintf("failure %d (%s %q)", i, w.file, w.test)
				if !strings.HasSuffix(f.File, "/"+w.file) || f.Test != w.test || f.Level != w.level || f.Kind != w.kind || !strings.Contains(f.Message, w.says) {
					t.Errorf("%s = %+v; want level %s kind %s saying %q", where, *f, w.level, w.kind, w.says)
				}
				if w.test != "" && !res.Printed(w.says) && w.kind != vitest.KindTimeout {
					t.Errorf("%s: Vitest did not print %q; the reader made it up", where, w.says)
				}
				switch wantLine := w.line; {
				case wantLine < 0 && major == 1:
					// Vitest 1 says where it threw but not in which file.
					if f.Line != 0 {
						t.Errorf("%s: line %d claimed for the test file; Vitest 1 does not say which file threw", where, f.Line)
					}
				case wantLine < 0:
					wantLine = -wantLine
					fallthrough
				case wantLine > 0:
					if f.Line != wantLine {
						t.Errorf("%s: line %d, want %d", where, f.Line, wantLine)
					}
				}
				if w.thrown != "" && major > 1 {
					if f.Thrown != filepath.Join(dir, w.thrown) {
						t.Errorf("%s: thrown at %q, want %s", where, f.Thrown, w.thrown)
					}
				} else if f.Thrown != "" {
					t.Errorf("%s: thrown at %q, want none", where, f.Thrown)
				}
			}
			if !res.Printed("REDIS_URL is not set") {
				t.Error("Vitest did not print the describe-level hook error the report drops")
			}
		})
	}
}

// An unhandled rejection with every test passing: Vitest exits 1 and prints
// it, but its JSON report is that of a green run, so no report reader can
// see it — category_classifier and collect_stderr read it from the console
// output and the unit's stderr instead.
func TestReportCannotShowAnUnhandledRejection(t *testing.T) {
	t.Parallel()
	for _, major := range vitesttest.Versions {
		t.Run(fmt.Sprintf("vitest%d", major), func(t *testing.T) {
			t.Parallel()
			res := vitesttest.Run(t, major, t.TempDir(), vitesttest.UnhandledSuite)
			run, err := vitest.Parse(res.Report)
			if err != nil {
				t.Fatal(err)
			}
			if run.Failed != 0 || run.Passed != 1 || len(run.Failures()) != 0 {
				t.Fatalf("run = %d failed, %d passed, %d failures; the report was expected to look green", run.Failed, run.Passed, len(run.Failures()))
			}
			if !res.Printed("Unhandled Rejection") || !res.Printed("write failed: disk quota exceeded") {
				t.Fatalf("Vitest did not print the rejection:\n%s", res.Console)
			}
		})
	}
}
