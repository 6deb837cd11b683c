package triage

import (
	"encoding/json"
	"path"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/lazyre"
	"github.com/toolhost/toolhost/internal/vitest"
)

// testOutcome is one test in one report.
type testOutcome struct {
	Report  string // project-relative report path
	File    string // test file as the report names it
	Name    string // full test name
	Status  string // passed, failed, skipped, pending, todo
	Line    int    // line of the test in its file (0 when unknown)
	Message string // failure messages joined, or the suite error
	Start   int64  // the report's start time (ms)
}

// loadedReport is a parsed report with its path.
type loadedReport struct {
	Path string
	vitest.Report
}

// parseVitest decodes data as a Vitest JSON report; ok is false when data is
// JSON of another shape.
func parseVitest(data []byte) (vitest.Report, bool) {
	var r vitest.Report
	if json.Unmarshal(data, &r) != nil || r.TestResults == nil {
		return vitest.Report{}, false
	}
	return r, true
}

// outcomes lists every test of a report. A suite that failed before any test
// ran (an import error) becomes one outcome named after its file.
func (r *loadedReport) outcomes() []testOutcome {
	var out []testOutcome
	start := int64(r.StartTime)
	for _, f := range *r.TestResults {
		var file string
		if f.Name != nil {
			file = *f.Name
		}
		var tests []vitest.Assertion
		if f.AssertionResults != nil {
			tests = *f.AssertionResults
		}
		if len(tests) == 0 && f.Message != "" {
			out = append(out, testOutcome{Report: r.Path, File: file, Name: file, Status: "failed", Message: f.Message, Start: start})
			continue
		}
		for _, a := range tests {
			var status string
			if a.Status != nil {
				status = *a.Status
			}
			o := testOutcome{Report: r.Path, File: file, Name: a.FullName, Status: status,
				Message: strings.Join(a.FailureMessages, "\n"), Start: start}
			if o.Name == "" {
				o.Name = a.Title
			}
			if a.Location != nil {
				o.Line = a.Location.Line
			}
			out = append(out, o)
		}
	}
	return out
}

// isReportCandidate keeps JSON files where reports live: anywhere under
// reports/ and under a unit's directory.
func isReportCandidate(rel string) bool {
	return path.Ext(rel) == ".json" && !strings.HasSuffix(rel, "package.json") &&
		!strings.HasSuffix(rel, "package-lock.json") && !strings.HasSuffix(rel, "tsconfig.json")
}

// findReports loads every Vitest report under reports/ and units/*/, newest
// (by the report's own startTime, then path) first. Files that are not
// Vitest reports are ignored.
func findReports(c *callctx.Ctx) ([]loadedReport, error) {
	var paths []string
	for _, root := range []string{"reports", "units"} {
		ps, err := walkFiles(c, root, isReportCandidate)
		if err != nil {
			return nil, err
		}
		paths = append(paths, ps...)
	}
	var out []loadedReport
	for _, p := range paths {
		data, err := readRel(c, p)
		if err != nil {
			continue
		}
		if r, ok := parseVitest(data); ok {
			out = append(out, loadedReport{Path: p, Report: r})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].StartTime != out[j].StartTime {
			return out[i].StartTime > out[j].StartTime
		}
		return out[i].Path > out[j].Path
	})
	return out, nil
}

// matchTest reports whether outcome o is the cited test: the full name, or
// the title path with " > " separators Vitest prints on the console, and —
// when a test file is cited — a report file that ends with it.
func matchTest(o testOutcome, test, testFile string) bool {
	if testFile != "" && !sameFile(o.File, testFile) {
		return false
	}
	if test == "" {
		return true
	}
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, " > ", " ")), " ") }
	return o.Name == test || norm(o.Name) == norm(test) || sameFile(o.Name, test)
}

// sameFile compares a report's (usually absolute) file path with a cited one
// (usually relative): equal, or one ends with "/"+other.
func sameFile(reported, cited string) bool {
	a, b := path.Clean(strings.TrimPrefix(reported, "file://")), path.Clean(cited)
	return a == b || strings.HasSuffix(a, "/"+b) || strings.HasSuffix(b, "/"+a)
}

// stackFrame matches one V8 stack frame that points at a file and line.
var stackFrame = lazyre.New(`^\s*at (?:.*? \()?(?:file://)?([^\s()]+?):(\d+):(\d+)\)?\s*$`)

// testFilePattern matches the usual test file names.
var testFilePattern = lazyre.New(`(?:\.(?:test|spec)\.[cm]?[jt]sx?|/__tests__/[^/]+\.[cm]?[jt]sx?)$`)
