package tester

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/lazyre"
	"github.com/toolhost/toolhost/internal/vitest"
)

// Failure kinds and levels are internal/vitest's: parse_vitest and
// hint_builder say what the one report reader found.
const (
	KindAssertion      = vitest.KindAssertion
	KindSnapshot       = vitest.KindSnapshot
	KindTypeError      = vitest.KindTypeError
	KindReferenceError = vitest.KindReferenceError
	KindSyntaxError    = vitest.KindSyntaxError
	KindTimeout        = vitest.KindTimeout
	KindImportError    = vitest.KindImportError
	KindTypeCheck      = vitest.KindTypeCheck
	KindError          = vitest.KindError
)

// Failure is one failed test, or a test file that failed outside any test.
type Failure struct {
	File    string `json:"file" jsonschema:"minLength=1,maxLength=1000" jsonschema_description:"the test file as named in the report"`
	Name    string `json:"name" jsonschema:"maxLength=2000" jsonschema_description:"full test name (describe blocks and title); empty for a file-level failure"`
	Level   string `json:"level,omitempty" jsonschema:"enum=test,enum=load,enum=hook" jsonschema_description:"where it failed: test (a test), load (the file did not load: import or syntax error, none of its tests ran), hook (a beforeAll/afterAll outside any test failed: with beforeAll the file's tests were skipped)"`
	Kind    string `json:"kind,omitempty" jsonschema:"enum=assertion,enum=snapshot,enum=type_error,enum=reference_error,enum=syntax_error,enum=timeout,enum=import_error,enum=typecheck,enum=error" jsonschema_description:"what the error is: assertion, snapshot (mismatch), type_error, reference_error, syntax_error (a file that does not parse, or JSON.parse of HTML: Unexpected token '<'), timeout, import_error, typecheck (TypeScript), error"`
	Message string `json:"message" jsonschema:"maxLength=20000" jsonschema_description:"first meaningful line of the failure message, colour codes removed"`
	Line    int    `json:"line,omitempty" jsonschema:"minimum=0" jsonschema_description:"line in the test file: the stack frame in that file, else the test's declaration; 0 when the report does not say (Vitest 1 names no file for an error thrown outside expect)"`
	Thrown  string `json:"thrown,omitempty" jsonschema:"maxLength=2000" jsonschema_description:"file:line of the first stack frame outside the test file and node_modules: where the code under test threw (empty when the test itself threw or the report has no stack)"`
}

// ParseVitestInput names the report, or carries it inline.
type ParseVitestInput struct {
	ReportPath string         `json:"report_path,omitempty" jsonschema:"maxLength=1000" jsonschema_description:"project-relative path of the file written by vitest run --reporter=json --outputFile=<path>; give this or report, not both"`
	Report     map[string]any `json:"report,omitempty" jsonschema_description:"the report JSON object itself; give this or report_path, not both"`
	tool.Page
}

// ParseVitestOutput is the result of parse_vitest.
type ParseVitestOutput struct {
	tool.Status
	Total       int   `json:"total" jsonschema_description:"tests in the report (files that failed to load contribute none)"`
	Passed      int   `json:"passed" jsonschema_description:"passed tests"`
	Failed      int   `json:"failed" jsonschema_description:"failed tests (files that failed to load are counted in suite_errors)"`
	Skipped     int   `json:"skipped" jsonschema_description:"skipped tests (skip, pending, disabled)"`
	Todo        int   `json:"todo" jsonschema_description:"tests marked todo"`
	SuiteErrors int   `json:"suite_errors" jsonschema_description:"file-level failures (level load or hook): a test file that failed to load (import or syntax error, none of its tests ran) or an error outside any test (a beforeAll/afterAll hook)"`
	DurationMS  int64 `json:"duration_ms" jsonschema_description:"wall time of the run in milliseconds"`
	// Causes come before the failures: on a large report they are what
	// the first page shows.
	Causes    []FailureCause  `json:"causes" page:"1" jsonschema_description:"the failures grouped by cause (level, kind, where the code under test threw, the message with its numbers left out), the most frequent first, each with its count and examples"`
	Failures  []Failure       `json:"failures" page:"2" jsonschema_description:"every failed test and every file that failed to load, in report order"`
	Truncated *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, and where the whole result is"`
}

// FailureCause is one cause shared by failures.
type FailureCause struct {
	Level    string   `json:"level" jsonschema_description:"test, load or hook (as in failures)"`
	Kind     string   `json:"kind" jsonschema_description:"the failure kind (as in failures)"`
	Message  string   `json:"message" jsonschema_description:"the message of the first failure with this cause"`
	Thrown   string   `json:"thrown,omitempty" jsonschema_description:"where the code under test threw"`
	Count    int      `json:"count" jsonschema_description:"failures with this cause"`
	Files    int      `json:"files" jsonschema_description:"distinct test files among them"`
	Examples []string `json:"examples" jsonschema_description:"up to 3 of them as file:line > test name"`
}

// ParseVitest is the parse_vitest tool.
func ParseVitest() tool.Tool {
	last := &lastReport{seed: maphash.MakeSeed()}
	return tool.New(tool.Spec{
		Name:        "parse_vitest",
		Title:       "Parse Vitest report",
		Description: "Read a Vitest JSON report (vitest run --reporter=json --outputFile=..., Vitest 1 to 4), by project-relative report_path or inline as report, and return counts (total, passed, failed, skipped, todo, suite_errors), the duration, the failures grouped by cause (count and examples), and per failure the file, full test name, level (test, or a file-level failure: load, hook), kind, first meaningful message line, line in the test file and where the code under test threw. A large report comes back in pages (truncated says which, and names the file holding it whole).",
		Effect:      tool.ReadOnly,
		Timeout:     10 * time.Second,
	}, func(_ context.Context, c *callctx.Ctx, in ParseVitestInput) (ParseVitestOutput, error) {
		data, source, err := reportBytes(c, in.ReportPath, in.Report)
		if err != nil {
			return ParseVitestOutput{}, err
		}
		sum, err := last.parse(data)
		if err != nil {
			return ParseVitestOutput{}, tool.Fail(fault.Content(err), "%s", source)
		}
		out := *sum
		out.OK = true
		return out, nil
	})
}

// lastReport keeps the summary of the last report parse_vitest read, under
// a hash of its bytes: an agent paging through a large result sends the
// same report again for every page, and a page must cost the reading and
// the paging, not another parse (1.2 s for 50,000 tests). A changed report
// has another hash and is parsed anew.
type lastReport struct {
	seed maphash.Seed

	mu   sync.Mutex
	hash uint64
	size int
	sum  *ParseVitestOutput // nil until a report parsed
}

func (l *lastReport) parse(data []byte) (*ParseVitestOutput, error) {
	h := maphash.Bytes(l.seed, data)
	l.mu.Lock()
	if l.sum != nil && l.hash == h && l.size == len(data) {
		defer l.mu.Unlock()
		return l.sum, nil
	}
	l.mu.Unlock()
	sum, err := ParseReport(data)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.hash, l.size, l.sum = h, len(data), sum
	l.mu.Unlock()
	return sum, nil
}

// reportBytes returns the report named by exactly one of path and inline.
func reportBytes(c *callctx.Ctx, path string, inline map[string]any) ([]byte, string, error) {
	switch {
	case path != "" && inline != nil:
		return nil, "", &tool.ValidationError{Field: "report_path", Reason: "give report_path or report, not both"}
	case path == "" && inline == nil:
		return nil, "", &tool.ValidationError{Field: "report_path", Reason: "give report_path (the file vitest wrote with --outputFile) or report (the JSON object)"}
	case inline != nil:
		b, err := json.Marshal(inline)
		return b, "report", err
	}
	data, err := c.Files.ReadFile(path)
	switch {
	case errors.Is(err, sandbox.ErrEscape):
		return nil, "", &tool.ValidationError{Field: "report_path", Reason: fmt.Sprintf("%q must be a path relative to the project dir that stays inside it", path)}
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", tool.Fail(nil, "report_path %s does not exist; run vitest run --reporter=json --outputFile=%s first", path, path)
	case err != nil:
		return nil, "", tool.Fail(err, "report_path %s cannot be read", path)
	}
	return data, "report_path " + path, nil
}

// ParseReport summarises a Vitest JSON report. The error says what is
// wrong with the input: not JSON, truncated, or not a Vitest report.
func ParseReport(data []byte) (*ParseVitestOutput, error) {
	run, err := vitest.Parse(data)
	if err != nil {
		return nil, err
	}
	out := &ParseVitestOutput{Total: run.Total, Passed: run.Passed, Failed: run.Failed, Skipped: run.Skipped,
		Todo: run.Todo, SuiteErrors: len(run.FileErrors()), DurationMS: run.DurationMS, Failures: []Failure{}}
	for _, f := range run.Failures() {
		out.Failures = append(out.Failures, failureOf(f))
	}
	out.Causes = causesOf(out.Failures)
	return out, nil
}

// examplesPerCause is how many failures a cause names.
const examplesPerCause = 3

// causesOf groups failures by level, kind, where the code under test threw
// and the message with its numbers left out (the same assertion on other
// values is the same cause), the most frequent first.
func causesOf(failures []Failure) []FailureCause {
	causes := []FailureCause{}
	index := map[[4]string]int{}
	files := map[[4]string]map[string]bool{}
	for _, f := range failures {
		key := [4]string{f.Level, f.Kind, f.Thrown, reDigits().ReplaceAllString(vitest.StripANSI(f.Message), "#")}
		i, ok := index[key]
		if !ok {
			i = len(causes)
			index[key] = i
			files[key] = map[string]bool{}
			causes = append(causes, FailureCause{Level: f.Level, Kind: f.Kind, Message: f.Message, Thrown: f.Thrown, Examples: []string{}})
		}
		c := &causes[i]
		c.Count++
		files[key][f.File] = true
		c.Files = len(files[key])
		if len(c.Examples) < examplesPerCause {
			ex := f.File
			if f.Line > 0 {
				ex += ":" + strconv.Itoa(f.Line)
			}
			if f.Name != "" {
				ex += " > " + f.Name
			}
			c.Examples = append(c.Examples, ex)
		}
	}
	slices.SortStableFunc(causes, func(a, b FailureCause) int { return b.Count - a.Count })
	return causes
}

var reDigits = lazyre.New(`[0-9]+`)

func failureOf(f *vitest.Failure) Failure {
	return Failure{File: f.File, Name: f.Test, Level: f.Level, Kind: f.Kind, Message: f.Message, Line: f.Line, Thrown: f.Thrown}
}
