package triage

import (
	"path"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/util/lazyre"
	"github.com/toolhost/toolhost/internal/vitest"
)

// testOutcome is one test, or one file-level failure, in one report.
type testOutcome struct {
	Report string // project-relative report path
	File   string // test file as the report names it
	Name   string // full test name; "" for a file-level failure
	Status string // passed, failed, skipped, pending, todo
	Level  string // vitest.LevelTest, LevelLoad or LevelHook
	Line   int    // line in the test file where it shows (0 when unknown)
	// Message is the failure text: the test's messages joined, or the
	// file-level error.
	Message string
	Start   int64 // the report's start time (ms)
}

// label names an outcome for messages: the test, or the file.
func (o testOutcome) label() string {
	if o.Name != "" {
		return o.Name
	}
	return o.File + " (outside any test: " + o.Level + ")"
}

// loadedReport is a parsed report with its path.
type loadedReport struct {
	Path string
	*vitest.Run
}

// outcomes lists every test of a report and, before a file's tests, its
// file-level failure (a file that did not load, a hook that failed), which
// is a failure like any other.
func (r *loadedReport) outcomes() []testOutcome {
	var out []testOutcome
	start := int64(r.StartTime)
	for _, f := range r.Files {
		if e := f.Error; e != nil {
			out = append(out, testOutcome{Report: r.Path, File: f.Name, Status: vitest.StatusFailed, Level: e.Level,
				Line: e.Line, Message: e.Text, Start: start})
		}
		for _, t := range f.Tests {
			o := testOutcome{Report: r.Path, File: f.Name, Name: t.Name, Status: t.Status, Level: vitest.LevelTest,
				Line: t.DeclaredAt, Message: t.Message, Start: start}
			if t.Failure != nil && t.Failure.Line > 0 {
				o.Line = t.Failure.Line
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
		if r, err := vitest.Parse(data); err == nil {
			out = append(out, loadedReport{Path: p, Run: r})
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
// when a test file is cited — a report file that ends with it. A cited test
// file alone matches every outcome of the file, its file-level failure
// first; a file-level failure also answers to its file cited as the test.
func matchTest(o testOutcome, test, testFile string) bool {
	if testFile != "" && !vitest.SameFile(o.File, testFile) {
		return false
	}
	if test == "" {
		return true
	}
	if o.Name == "" {
		return vitest.SameFile(o.File, test)
	}
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, " > ", " ")), " ") }
	return o.Name == test || norm(o.Name) == norm(test)
}

// testFilePattern matches the usual test file names.
var testFilePattern = lazyre.New(`(?:\.(?:test|spec)\.[cm]?[jt]sx?|/__tests__/[^/]+\.[cm]?[jt]sx?)$`)
