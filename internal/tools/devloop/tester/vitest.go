package tester

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/lazyre"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/vitest"
)

// Failure kinds. parse_vitest and hint_builder share them.
const (
	KindAssertion      = "assertion"
	KindSnapshot       = "snapshot"
	KindTypeError      = "type_error"
	KindReferenceError = "reference_error"
	KindTimeout        = "timeout"
	KindImportError    = "import_error"
	KindSuiteError     = "suite_error"
	KindError          = "error"
)

// Failure is one failed test, or one test file that failed to load.
type Failure struct {
	File    string `json:"file" jsonschema:"minLength=1,maxLength=1000" jsonschema_description:"the test file as named in the report"`
	Name    string `json:"name" jsonschema:"maxLength=2000" jsonschema_description:"full test name (describe blocks and title); empty for a file that failed to load"`
	Kind    string `json:"kind,omitempty" jsonschema:"enum=assertion,enum=snapshot,enum=type_error,enum=reference_error,enum=timeout,enum=import_error,enum=suite_error,enum=error" jsonschema_description:"what failed: assertion, snapshot, type_error, reference_error, timeout, import_error, suite_error (the file did not load), error"`
	Message string `json:"message" jsonschema:"maxLength=20000" jsonschema_description:"first meaningful line of the failure message, colour codes removed"`
	Line    int    `json:"line,omitempty" jsonschema:"minimum=0" jsonschema_description:"line in the test file: the stack frame in that file, else the test's location"`
}

// ParseVitestInput names the report, or carries it inline.
type ParseVitestInput struct {
	ReportPath string         `json:"report_path,omitempty" jsonschema:"maxLength=1000" jsonschema_description:"project-relative path of the file written by vitest run --reporter=json --outputFile=<path>; give this or report, not both"`
	Report     map[string]any `json:"report,omitempty" jsonschema_description:"the report JSON object itself; give this or report_path, not both"`
}

// ParseVitestOutput is the result of parse_vitest.
type ParseVitestOutput struct {
	tool.Status
	Total       int       `json:"total" jsonschema_description:"tests in the report (files that failed to load contribute none)"`
	Passed      int       `json:"passed" jsonschema_description:"passed tests"`
	Failed      int       `json:"failed" jsonschema_description:"failed tests (files that failed to load are counted in suite_errors)"`
	Skipped     int       `json:"skipped" jsonschema_description:"skipped tests (skip, pending, disabled)"`
	Todo        int       `json:"todo" jsonschema_description:"tests marked todo"`
	SuiteErrors int       `json:"suite_errors" jsonschema_description:"file-level errors: a test file that failed to load (import or syntax error, none of its tests ran) or an error outside any test (a beforeAll/afterAll hook)"`
	DurationMS  int64     `json:"duration_ms" jsonschema_description:"wall time of the run in milliseconds"`
	Failures    []Failure `json:"failures" jsonschema_description:"every failed test and every file that failed to load, in report order"`
}

// ParseVitest is the parse_vitest tool.
func ParseVitest() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "parse_vitest",
		Title:       "Parse Vitest report",
		Description: "Read a Vitest JSON report (vitest run --reporter=json --outputFile=…), by project-relative report_path or inline as report, and return counts (total, passed, failed, skipped, todo, suite_errors), the duration, and per failure the file, full test name, kind, first meaningful message line and line number.",
		Effect:      tool.ReadOnly,
		Timeout:     10 * time.Second,
	}, parseVitest)
}

func parseVitest(_ context.Context, c *callctx.Ctx, in ParseVitestInput) (ParseVitestOutput, error) {
	data, source, err := reportBytes(c, in.ReportPath, in.Report)
	if err != nil {
		return ParseVitestOutput{}, err
	}
	sum, err := ParseReport(data)
	if err != nil {
		return ParseVitestOutput{}, tool.Fail("%s: %v", source, err)
	}
	sum.OK = true
	return *sum, nil
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
		return nil, "", tool.Fail("report_path %s does not exist; run vitest run --reporter=json --outputFile=%s first", path, path)
	case err != nil:
		return nil, "", tool.Fail("report_path %s cannot be read: %v", path, err)
	}
	return data, "report_path " + path, nil
}

// ParseReport parses a Vitest JSON report. The error says what is wrong
// with the input: not JSON, truncated, or not a Vitest report.
func ParseReport(data []byte) (*ParseVitestOutput, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("the report is empty; Vitest writes it only when the run finishes")
	}
	var r vitest.Report
	if err := json.Unmarshal(data, &r); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) && syn.Offset >= int64(len(data)) || strings.Contains(err.Error(), "unexpected end of JSON input") {
			return nil, fmt.Errorf("the JSON ends early after %d bytes (truncated: was Vitest killed or still writing?); rerun vitest run --reporter=json --outputFile=<path>", len(data))
		}
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, fmt.Errorf("not a Vitest JSON report: field %s has the wrong type (%s, expected %s)", typ.Field, typ.Value, typ.Type)
		}
		return nil, fmt.Errorf("not JSON: %v; expected the file written by vitest run --reporter=json", err)
	}
	if r.TestResults == nil {
		return nil, errors.New("not a Vitest JSON report: no testResults array (expected the output of vitest run --reporter=json)")
	}
	out := &ParseVitestOutput{Failures: []Failure{}}
	var end float64
	var sumDur float64
	for i, f := range *r.TestResults {
		if f.Name == nil || f.AssertionResults == nil {
			return nil, fmt.Errorf("not a Vitest JSON report: testResults[%d] lacks name or assertionResults", i)
		}
		file := *f.Name
		end = math.Max(end, f.EndTime)
		// A file-level error: the file failed to load (no assertions), or
		// something outside any test failed (a beforeAll/afterAll hook), which
		// Vitest reports as the file's message.
		if f.Status == "failed" && (len(*f.AssertionResults) == 0 || strings.TrimSpace(f.Message) != "") {
			out.SuiteErrors++
			msg := firstMeaningfulLine(f.Message)
			if msg == "" {
				msg = "the test file failed to load (Vitest gave no message)"
			}
			out.Failures = append(out.Failures, Failure{File: file, Kind: KindSuiteError, Message: msg, Line: lineIn(f.Message, file)})
		}
		for j, a := range *f.AssertionResults {
			if a.Status == nil {
				return nil, fmt.Errorf("not a Vitest JSON report: testResults[%d].assertionResults[%d] has no status", i, j)
			}
			out.Total++
			sumDur += a.Duration
			switch *a.Status {
			case "passed":
				out.Passed++
			case "failed":
				out.Failed++
				out.Failures = append(out.Failures, assertionFailure(file, a))
			case "skipped", "pending", "disabled":
				out.Skipped++
			case "todo":
				out.Todo++
			default:
				return nil, fmt.Errorf("not a Vitest JSON report: testResults[%d].assertionResults[%d].status is %q (expected passed, failed, skipped, pending or todo)", i, j, *a.Status)
			}
		}
	}
	if r.NumTotalTests != nil && *r.NumTotalTests != out.Total {
		return nil, fmt.Errorf("inconsistent report: numTotalTests is %d but testResults hold %d tests; the file was probably cut or edited, rerun Vitest", *r.NumTotalTests, out.Total)
	}
	switch {
	case r.StartTime > 0 && end >= r.StartTime:
		out.DurationMS = int64(math.Round(end - r.StartTime))
	default:
		out.DurationMS = int64(math.Round(sumDur))
	}
	return out, nil
}

func assertionFailure(file string, a vitest.Assertion) Failure {
	name := a.FullName
	if name == "" {
		name = strings.Join(append(append([]string{}, a.AncestorTitles...), a.Title), " ")
	}
	raw := strings.Join(a.FailureMessages, "\n")
	f := Failure{File: file, Name: name, Message: firstMeaningfulLine(raw), Line: lineIn(raw, file)}
	if f.Line == 0 && a.Location != nil {
		f.Line = a.Location.Line
	}
	f.Kind = Classify(f.Message)
	if f.Kind == KindTimeout && strings.Contains(f.Message, stackTraceMarker) {
		f.Message = "Test timed out (Vitest's JSON report shows a timeout as " + stackTraceMarker + ")"
	}
	if f.Message == "" {
		f.Message = "the test failed without a message"
	}
	return f
}

// stackTraceMarker is the message Vitest 3 puts in the JSON report for a
// test or hook timeout: the error is created early to capture the stack and
// its message is replaced later, but the reporter prints the stack string.
const stackTraceMarker = "STACK_TRACE_ERROR"

var ansi = lazyre.New(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// StripANSI removes terminal colour and cursor codes.
func StripANSI(s string) string { return ansi().ReplaceAllString(s, "") }

var stackFrame = lazyre.New(`^\s*at\s`)

// firstMeaningfulLine is the first line that is neither blank nor a stack
// frame, without colour codes.
func firstMeaningfulLine(s string) string {
	for _, l := range strings.Split(StripANSI(s), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || stackFrame().MatchString(l) || strings.Trim(l, "-=*⎯ ") == "" {
			continue
		}
		return l
	}
	return ""
}

var frameLoc = lazyre.New(`(?:file://)?(/[^\s():]+|[A-Za-z]:[\\/][^\s():]+|[^\s():]+\.[cm]?[jt]sx?):(\d+)(?::\d+)?`)

// lineIn returns the line of the first location in text that points into
// file (a stack frame or an "at file:line" note), or 0.
func lineIn(text, file string) int {
	if file == "" {
		return 0
	}
	for _, m := range frameLoc().FindAllStringSubmatch(StripANSI(text), -1) {
		if m[1] == file || strings.HasSuffix(file, "/"+strings.TrimPrefix(m[1], "./")) {
			n, err := strconv.Atoi(m[2])
			if err == nil {
				return n
			}
		}
	}
	return 0
}

var (
	reSnapshot  = lazyre.New(`(?i)snapshot .*mismatched|toMatch(Inline)?Snapshot|obsolete snapshot`)
	reTimeout   = lazyre.New(`(?i)(test|hook) timed out|timed out in \d+\s*ms|` + stackTraceMarker)
	reImport    = lazyre.New(`(?i)cannot find (module|package)|failed to (load|resolve) (url|import|module)|does not provide an export named|ERR_MODULE_NOT_FOUND|is not exported by|Failed to resolve entry`)
	reAssertion = lazyre.New(`^(AssertionError|AssertionError \[ERR_ASSERTION\])\b|^expected .+ to |^Error: expect\(`)
)

// Classify returns the failure kind a message shows.
func Classify(msg string) string {
	msg = StripANSI(msg)
	switch {
	case reSnapshot().MatchString(msg):
		return KindSnapshot
	case reTimeout().MatchString(msg):
		return KindTimeout
	case reImport().MatchString(msg):
		return KindImportError
	case strings.HasPrefix(msg, "TypeError"):
		return KindTypeError
	case strings.HasPrefix(msg, "ReferenceError"):
		return KindReferenceError
	case reAssertion().MatchString(msg):
		return KindAssertion
	}
	return KindError
}
