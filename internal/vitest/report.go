package vitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Report is a whole report as Vitest writes it. Pointers tell a missing
// field from a zero one.
type Report struct {
	NumTotalTests *int          `json:"numTotalTests"`
	StartTime     float64       `json:"startTime"`
	Success       *bool         `json:"success"`
	TestResults   *[]FileResult `json:"testResults"`
}

// FileResult is one test file of a report.
type FileResult struct {
	Name             *string      `json:"name"`
	Status           string       `json:"status"`
	Message          string       `json:"message"`
	StartTime        float64      `json:"startTime"`
	EndTime          float64      `json:"endTime"`
	AssertionResults *[]Assertion `json:"assertionResults"`
}

// Assertion is one test of a file.
type Assertion struct {
	AncestorTitles  []string        `json:"ancestorTitles"`
	FullName        string          `json:"fullName"`
	Title           string          `json:"title"`
	Status          *string         `json:"status"`
	Duration        float64         `json:"duration"`
	FailureMessages []string        `json:"failureMessages"`
	Location        *Location       `json:"location"`
	Meta            json.RawMessage `json:"meta"`
}

// Location is a line and column Vitest recorded for a test.
type Location struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Test statuses as the report writes them.
const (
	StatusPassed  = "passed"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
	StatusPending = "pending"
	StatusTodo    = "todo"
)

// Run is a parsed, checked report.
type Run struct {
	Report
	Total, Passed, Failed, Skipped, Todo int
	// DurationMS is the wall time of the run.
	DurationMS int64
	// Files are the test files in report order.
	Files []File
}

// File is one test file of a run.
type File struct {
	Name  string
	Tests []Test
	// Error is the file-level failure, if any.
	Error *Failure
}

// Test is one test of a file.
type Test struct {
	Name   string // full name: describe blocks and title
	Status string
	// Message is the failure messages joined, colour codes removed.
	Message string
	// DeclaredAt is the line of the test's declaration (0 when unknown).
	DeclaredAt int
	// Failures are a failed test's errors, one per error it raised: more
	// than one when expect.soft assertions failed (each at its own line).
	// A retried test raises the same assertion again on each try; that is
	// one failure (the first try's).
	Failures []*Failure
	// Failure is the first of Failures (nil for a test that did not fail).
	Failure *Failure
}

// ErrNotReport marks data that is JSON but not a Vitest report.
var ErrNotReport = errors.New("not a Vitest JSON report")

// Parse parses and checks a Vitest JSON report. The error says what is
// wrong with the input — not JSON, truncated, or not a Vitest report — in
// words a model can act on.
func Parse(data []byte) (*Run, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("the report is empty; Vitest writes it only when the run finishes")
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) && syn.Offset >= int64(len(data)) || strings.Contains(err.Error(), "unexpected end of JSON input") {
			return nil, fmt.Errorf("the JSON ends early after %d bytes (truncated: was Vitest killed or still writing?); rerun vitest run --reporter=json --outputFile=<path>", len(data))
		}
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, fmt.Errorf("%w: field %s has the wrong type (%s, expected %s)", ErrNotReport, typ.Field, typ.Value, typ.Type)
		}
		return nil, fmt.Errorf("not JSON: %v; expected the file written by vitest run --reporter=json", err)
	}
	if r.TestResults == nil {
		return nil, fmt.Errorf("%w: no testResults array (expected the output of vitest run --reporter=json)", ErrNotReport)
	}
	if len(*r.TestResults) == 0 {
		// Vitest writes its counts and verdict in every report; a report
		// of no test file is a run that found none, never 0 tests passed.
		switch {
		case r.Success == nil || r.NumTotalTests == nil:
			return nil, fmt.Errorf("%w: testResults is empty and numTotalTests, success and startTime, which Vitest writes in every report, are missing: an empty or hand-made object, not a run; rerun vitest run --reporter=json --outputFile=<path>", ErrNotReport)
		case !*r.Success:
			return nil, errors.New("the run found no test file: Vitest ran none and failed the run: no file matched its include patterns (it printed \"No test files found\"); check the test file names and vitest.config's include, or the directory it ran in")
		}
	}
	run := &Run{Report: r}
	var end, sumDur float64
	for i, f := range *r.TestResults {
		if f.Name == nil || f.AssertionResults == nil {
			return nil, fmt.Errorf("%w: testResults[%d] lacks name or assertionResults", ErrNotReport, i)
		}
		end = math.Max(end, f.EndTime)
		file := File{Name: *f.Name}
		declared := declarationLocations(*f.AssertionResults)
		ran := 0
		for j, a := range *f.AssertionResults {
			if a.Status == nil {
				return nil, fmt.Errorf("%w: testResults[%d].assertionResults[%d] has no status", ErrNotReport, i, j)
			}
			run.Total++
			sumDur += a.Duration
			t := Test{Name: fullName(a), Status: *a.Status, Message: StripANSI(strings.Join(a.FailureMessages, "\n"))}
			if declared && a.Location != nil {
				t.DeclaredAt = a.Location.Line
			}
			switch t.Status {
			case StatusPassed:
				run.Passed++
				ran++
			case StatusFailed:
				run.Failed++
				ran++
				t.Failures = testFailures(file.Name, t, a, declared)
				t.Failure = t.Failures[0]
			case StatusSkipped, StatusPending, "disabled":
				run.Skipped++
			case StatusTodo:
				run.Todo++
			default:
				return nil, fmt.Errorf("%w: testResults[%d].assertionResults[%d].status is %q (expected passed, failed, skipped, pending or todo)", ErrNotReport, i, j, t.Status)
			}
			file.Tests = append(file.Tests, t)
		}
		if f.Status == StatusFailed {
			file.Error = fileFailure(file, f.Message, ran)
		}
		run.Files = append(run.Files, file)
	}
	if r.NumTotalTests != nil && *r.NumTotalTests != run.Total {
		return nil, fmt.Errorf("inconsistent report: numTotalTests is %d but testResults hold %d tests; the file was probably cut or edited, rerun Vitest", *r.NumTotalTests, run.Total)
	}
	if r.StartTime > 0 && end >= r.StartTime {
		run.DurationMS = int64(math.Round(end - r.StartTime))
	} else {
		run.DurationMS = int64(math.Round(sumDur))
	}
	return run, nil
}

// declarationLocations reports whether the assertions' locations are test
// declarations (Vitest 2+, which also writes a meta object per assertion)
// rather than Vitest 1's location of the failure, in an unnamed file.
func declarationLocations(as []Assertion) bool {
	for _, a := range as {
		if a.Meta != nil {
			return true
		}
	}
	return false
}

func fullName(a Assertion) string {
	if n := strings.TrimSpace(a.FullName); n != "" {
		return n
	}
	var parts []string
	for _, p := range append(append([]string{}, a.AncestorTitles...), a.Title) {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}

// FileErrors returns the file-level failures of the run, in report order.
func (r *Run) FileErrors() []*Failure {
	var out []*Failure
	for i := range r.Files {
		if e := r.Files[i].Error; e != nil {
			out = append(out, e)
		}
	}
	return out
}

// Failures returns every failure of the run in report order: per file, its
// file-level failure first, then its failed tests.
func (r *Run) Failures() []*Failure {
	var out []*Failure
	for i := range r.Files {
		f := &r.Files[i]
		if f.Error != nil {
			out = append(out, f.Error)
		}
		for j := range f.Tests {
			out = append(out, f.Tests[j].Failures...)
		}
	}
	return out
}
