package tester

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/lazyre"
	"github.com/toolhost/toolhost/internal/vitest"
)

// HintBuilderInput carries failures, or names a report to take them from.
type HintBuilderInput struct {
	Failures   []Failure `json:"failures,omitempty" jsonschema:"maxItems=5000" jsonschema_description:"failures as parse_vitest returns them; give this or report_path, not both"`
	ReportPath string    `json:"report_path,omitempty" jsonschema:"maxLength=1000" jsonschema_description:"project-relative path of a Vitest JSON report; give this or failures, not both"`
	MaxHints   int       `json:"max_hints,omitempty" jsonschema:"minimum=1,maximum=100" jsonschema_description:"at most this many hints, most widespread cause first (default 10)"`
	tool.Page
}

// Hint is advice for one cause: one file, one kind of failure.
type Hint struct {
	File   string   `json:"file" jsonschema_description:"the test file"`
	Tests  []string `json:"tests" jsonschema_description:"the tests that share this cause (empty for a file-level failure)"`
	Level  string   `json:"level" jsonschema_description:"test, or a file-level failure: load (the file did not load), hook (a beforeAll/afterAll failed)"`
	Kind   string   `json:"kind" jsonschema_description:"failure kind: assertion, snapshot, type_error, reference_error, syntax_error, timeout, import_error, typecheck, error"`
	Line   int      `json:"line,omitempty" jsonschema_description:"first line in the test file where it shows"`
	Thrown string   `json:"thrown,omitempty" jsonschema_description:"file:line in the code under test where the error was thrown (first frame outside the test file and node_modules)"`
	Hint   string   `json:"hint" jsonschema_description:"one actionable sentence for the coder"`
}

// HintBuilderOutput is the result of hint_builder.
type HintBuilderOutput struct {
	tool.Status
	Failures  int             `json:"failures" jsonschema_description:"failures considered"`
	Groups    int             `json:"groups" jsonschema_description:"distinct causes (file and kind) before max_hints"`
	Hints     []Hint          `json:"hints" page:"1" jsonschema_description:"hints, the cause shared by most tests first"`
	Markdown  string          `json:"markdown" page:"2" jsonschema_description:"the hints as a markdown list for a human or the coder's prompt"`
	Truncated *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// HintBuilder is the hint_builder tool.
func HintBuilder() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "hint_builder",
		Title:       "Build hints for the coder",
		Description: "Turn test failures (parse_vitest failures, or a Vitest report_path) into at most max_hints hints for the coder: grouped by file, level and failure kind (assertion expected/received, TypeError, ReferenceError, timeout, import/module error, syntax error, a file that did not load, a failing beforeAll/afterAll hook), each snapshot mismatch on its own, identical messages merged, the cause shared by most tests first. Each hint names the file, the tests, the kind, the line in the test file and where the code under test threw, and one actionable sentence; markdown renders them.",
		Effect:      tool.ReadOnly,
		Timeout:     10 * time.Second,
	}, hintBuilder)
}

func hintBuilder(_ context.Context, c *callctx.Ctx, in HintBuilderInput) (HintBuilderOutput, error) {
	failures := in.Failures
	switch {
	case in.ReportPath != "" && in.Failures != nil:
		return HintBuilderOutput{}, &tool.ValidationError{Field: "report_path", Reason: "give failures or report_path, not both"}
	case in.ReportPath != "":
		data, source, err := reportBytes(c, in.ReportPath, nil)
		if err != nil {
			return HintBuilderOutput{}, err
		}
		sum, err := ParseReport(data)
		if err != nil {
			return HintBuilderOutput{}, tool.Fail(fault.Content(err), "%s", source)
		}
		failures = sum.Failures
	case in.Failures == nil:
		return HintBuilderOutput{}, &tool.ValidationError{Field: "failures", Reason: "give failures (from parse_vitest) or report_path (a Vitest JSON report)"}
	}
	max := in.MaxHints
	if max == 0 {
		max = 10
	}
	hints := BuildHints(failures)
	out := HintBuilderOutput{Status: tool.Status{OK: true}, Failures: len(failures), Groups: len(hints)}
	out.Hints = hints[:min(max, len(hints))]
	out.Markdown = Markdown(out.Hints, len(hints))
	return out, nil
}

type group struct {
	file, level, kind string
	tests             []string
	messages          []string // distinct, in first-seen order
	line              int
	thrown            string
	order             int
}

// BuildHints groups failures by file, level, kind and where the code under
// test threw (a snapshot mismatch by its test), merges identical messages
// and ranks the groups by how many tests share them.
func BuildHints(failures []Failure) []Hint {
	var groups []*group
	index := map[[4]string]*group{}
	for _, f := range failures {
		kind := f.Kind
		if kind == "" || kind == KindError {
			// An untyped failure (given by hand) gets what its message says.
			kind = vitest.Classify(f.Message)
		}
		level := f.Level
		if level == "" {
			level = vitest.LevelTest
			if f.Name == "" {
				level = vitest.LevelLoad
			}
		}
		// Errors thrown at different places in the code under test are
		// different causes; an error raised in the test itself (an
		// assertion, the test's own code) is told apart by what it says,
		// so two different assertions of one file are two hints; each
		// snapshot is its own stored value.
		msg := strings.TrimSpace(vitest.StripANSI(f.Message))
		key := [4]string{f.File, level, kind, "at " + f.Thrown}
		switch {
		case kind == KindSnapshot:
			key[3] = "test " + f.Name
		case f.Thrown == "" && level == vitest.LevelTest:
			key[3] = "says " + msg
		}
		g := index[key]
		if g == nil {
			g = &group{file: f.File, level: level, kind: kind, order: len(groups)}
			index[key] = g
			groups = append(groups, g)
		}
		if f.Name != "" && !slices.Contains(g.tests, f.Name) {
			g.tests = append(g.tests, f.Name)
		}
		if msg != "" && !slices.Contains(g.messages, msg) {
			g.messages = append(g.messages, msg)
		}
		if f.Line > 0 && (g.line == 0 || f.Line < g.line) {
			g.line = f.Line
		}
		if g.thrown == "" {
			g.thrown = f.Thrown
		}
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		// A file-level failure hides all its tests: weigh it as one, and
		// before a test failure of the same weight.
		if d := max(len(b.tests), 1) - max(len(a.tests), 1); d != 0 {
			return d
		}
		if d := levelRank(a.level) - levelRank(b.level); d != 0 {
			return d
		}
		if d := slices.Index(vitest.Kinds, a.kind) - slices.Index(vitest.Kinds, b.kind); d != 0 {
			return d
		}
		return a.order - b.order
	})
	hints := make([]Hint, 0, len(groups))
	for _, g := range groups {
		tests := g.tests
		if tests == nil {
			tests = []string{}
		}
		hints = append(hints, Hint{File: g.file, Tests: tests, Level: g.level, Kind: g.kind, Line: g.line, Thrown: g.thrown, Hint: g.sentence()})
	}
	return hints
}

func levelRank(level string) int {
	switch level {
	case vitest.LevelLoad:
		return 0
	case vitest.LevelHook:
		return 1
	}
	return 2
}

var (
	reExpectedTo = lazyre.New(`expected (.+?) to (?:be|equal|deeply equal|strictly equal|have length|contain|include|match|be called with) (.+?)(?: // .*)?$`)
	reNotDefined = lazyre.New(`(?:ReferenceError: )?(\S+) is not defined`)
	reReadProp   = lazyre.New(`Cannot read propert(?:y|ies) of (undefined|null) \(reading '([^']+)'\)`)
	reNotFunc    = lazyre.New(`(?:TypeError: )?(\S+) is not a function`)
	reModule     = lazyre.New(`(?:Cannot find (?:module|package)|Failed to (?:load|resolve) (?:url|import|module)) '?([^'\s]+)'?`)
	reConnRefuse = lazyre.New(`\bECONNREFUSED (\S+)`)
	reHTMLJSON   = lazyre.New(`Unexpected token '<'|"<!doctype|is not valid JSON`)
)

// sentence is the one actionable sentence of a group.
func (g *group) sentence() string {
	at := g.file
	if g.line > 0 {
		at = fmt.Sprintf("%s:%d", g.file, g.line)
	}
	// Where the code under test threw, when that is not the test itself.
	where := at
	if g.thrown != "" {
		where = g.thrown + " (called from " + at + ")"
	}
	msg := ""
	if len(g.messages) > 0 {
		msg = g.messages[0]
	}
	n := len(g.tests)
	tests := plural(n, "test")
	more := ""
	if len(g.messages) > 1 {
		more = fmt.Sprintf(" (and %d other message(s))", len(g.messages)-1)
	}
	switch g.level {
	case vitest.LevelHook:
		cause := "read the error and fix the hook or the code it calls"
		switch {
		case reConnRefuse().MatchString(msg):
			cause = "nothing listens at " + reConnRefuse().FindStringSubmatch(msg)[1] + ": start the service the hook connects to (database, server) before the tests, or point the test at the right host and port"
		case strings.Contains(msg, "JSON report carries no error"):
			cause = "its error is only in Vitest's console output (run vitest without --reporter=json to read it)"
		case g.kind == KindTimeout:
			cause = "the hook did not finish in time: await its work and make sure what it waits for answers, or raise the hook's timeout"
		}
		return fmt.Sprintf("A beforeAll/afterAll hook of %s fails (%s), outside any test, so the file fails even where its tests pass or were skipped — %s.", g.file, msg, cause)
	case vitest.LevelLoad:
		switch g.kind {
		case KindImportError:
			if m := reModule().FindStringSubmatch(msg); m != nil {
				return fmt.Sprintf("%s cannot load: the import of %s fails (%s), so none of its tests ran — create that module or fix the import path.", g.file, m[1], msg)
			}
			return fmt.Sprintf("%s cannot load (%s), so none of its tests ran — fix the import or export it names.", g.file, msg)
		case KindSyntaxError:
			return fmt.Sprintf("%s does not parse (%s), so none of its tests ran — fix the syntax at %s.", g.file, msg, at)
		}
		return fmt.Sprintf("%s failed to load (%s), so none of its tests ran — fix the top-level code it names at %s.", g.file, msg, at)
	}
	switch g.kind {
	case KindAssertion:
		if m := reExpectedTo().FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("In %s at %s the code returned %s where the test expects %s%s — fix the implementation, or the test if the specification changed.", tests, where, m[1], m[2], more)
		}
		return fmt.Sprintf("In %s at %s an assertion fails (%s)%s — compare expected and received and fix the implementation.", tests, where, msg, more)
	case KindSnapshot:
		return fmt.Sprintf("In %s at %s the output no longer matches the stored snapshot: if the change is intended, update it with vitest run -u; otherwise find what changed the output.", tests, at)
	case KindTypeError:
		if m := reReadProp().FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("In %s at %s the code reads .%s of %s%s: make sure the value is set (return it, await it, or check for %s) before reading the property.", tests, where, m[2], m[1], more, m[1])
		}
		if m := reNotFunc().FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("In %s at %s %s is called but is not a function%s: check the import/export of %s, its spelling, and that it is passed in.", tests, where, m[1], more, m[1])
		}
		return fmt.Sprintf("In %s at %s a TypeError is thrown (%s)%s: a value has the wrong type; check what the code under test returns there.", tests, where, msg, more)
	case KindReferenceError:
		if m := reNotDefined().FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("In %s at %s %s is used but not defined%s: import or define %s before using it.", tests, where, m[1], more, m[1])
		}
		return fmt.Sprintf("In %s at %s a ReferenceError is thrown (%s)%s: import or define the missing name.", tests, where, msg, more)
	case KindSyntaxError:
		if reHTMLJSON().MatchString(msg) {
			return fmt.Sprintf("In %s at %s JSON.parse got HTML (%s)%s: the request reached a page, not the API — check the route, the base URL and any proxy, and the response's status before parsing it.", tests, where, msg, more)
		}
		return fmt.Sprintf("In %s at %s a SyntaxError is thrown (%s)%s: the code parses text that is not what it expects.", tests, where, msg, more)
	case KindTimeout:
		return fmt.Sprintf("In %s of %s the test did not finish in time: await every promise and make sure the code under test resolves (a missing response or an unresolved promise), or raise the test's timeout if the work is really that slow.", tests, g.file)
	case KindTypeCheck:
		return fmt.Sprintf("In %s at %s TypeScript rejects the code (%s)%s: fix the types the error names.", tests, at, msg, more)
	case KindImportError:
		return fmt.Sprintf("In %s at %s a module cannot be loaded (%s)%s: install it or fix the import path.", tests, where, msg, more)
	}
	return fmt.Sprintf("In %s at %s the test fails with %q%s — read the error and fix the code it points to.", tests, where, msg, more)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Markdown renders hints as a numbered list; total is the number of groups
// before the max_hints cut.
func Markdown(hints []Hint, total int) string {
	if len(hints) == 0 {
		return "No failures: nothing to fix.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Hints for the coder (%d of %d)\n\n", len(hints), total)
	for i, h := range hints {
		fmt.Fprintf(&b, "%d. **%s** — `%s`: %s\n", i+1, h.Kind, h.File, h.Hint)
		for _, t := range h.Tests {
			fmt.Fprintf(&b, "   - %s\n", t)
		}
	}
	return b.String()
}
