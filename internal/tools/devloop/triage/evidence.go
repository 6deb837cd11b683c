package triage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/lazyre"
	"github.com/toolhost/toolhost/internal/vitest"
)

// logLineWindow is how far (in lines) a quoted excerpt may sit from its
// cited log_line and still count as "at the cited line": logs shift by a few
// lines between runs, a citation further off points at something else.
const logLineWindow = 5

// logContext is how many lines around a verified excerpt are returned.
const logContext = 2

// maxExcerpt caps one excerpt in a result.
const maxExcerpt = 2000

// Evidence kinds in verified and missing items.
const (
	kindTest     = "test"
	kindTestFile = "test_file"
	kindReport   = "report"
	kindLog      = "log"
	kindLogFile  = "log_file"
	kindRun      = "run"
	kindRunStep  = "run_step"
)

// Evidence statuses.
const (
	statusVerified   = "verified"
	statusPartial    = "partial"
	statusUnverified = "unverified"
)

// ExtractEvidenceInput names the bug whose citations are checked.
type ExtractEvidenceInput struct {
	BugID string `json:"bug_id" jsonschema:"pattern=^BUG-[0-9]{4\\,}$" jsonschema_description:"the bug to check, e.g. BUG-0001 (bugs/BUG-0001.json)"`
	tool.Page
}

// VerifiedItem is a citation found where the bug says it is.
type VerifiedItem struct {
	Kind    string `json:"kind" jsonschema:"enum=test,enum=test_file,enum=log,enum=log_file,enum=run,enum=run_step" jsonschema_description:"what was checked"`
	Path    string `json:"path" jsonschema_description:"project-relative file holding the evidence"`
	Line    int    `json:"line,omitempty" jsonschema_description:"1-based line of the evidence (in the test file for a test, in the log or run file otherwise)"`
	Excerpt string `json:"excerpt" jsonschema_description:"the evidence itself: failure message, log lines around the quote, failed run step"`
	Detail  string `json:"detail,omitempty" jsonschema_description:"anything the reader should know, e.g. the test passed in the newest report"`
}

// MissingItem is a citation that could not be verified.
type MissingItem struct {
	Kind   string `json:"kind" jsonschema:"enum=test,enum=test_file,enum=report,enum=log,enum=log_file,enum=run" jsonschema_description:"what was cited"`
	Cited  string `json:"cited" jsonschema_description:"the citation as the bug gives it"`
	Reason string `json:"reason" jsonschema_description:"why it could not be verified, and what to fix in the bug's evidence"`
}

// ExtractEvidenceOutput is the result of extract_evidence / verify_evidence.
type ExtractEvidenceOutput struct {
	tool.Status
	BugID          string          `json:"bug_id,omitempty" jsonschema_description:"the bug checked"`
	Path           string          `json:"path,omitempty" jsonschema_description:"project-relative path of the evidence record written (triage/<bug>.json)"`
	EvidenceStatus string          `json:"evidence_status,omitempty" jsonschema:"enum=verified,enum=partial,enum=unverified" jsonschema_description:"verified: every citation checked out; partial: some did; unverified: none did"`
	Verified       []VerifiedItem  `json:"verified" page:"1" jsonschema_description:"citations found where cited"`
	Missing        []MissingItem   `json:"missing" page:"2" jsonschema_description:"citations not found, with the reason"`
	Truncated      *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// EvidenceRecord is triage/<bug>.json.
type EvidenceRecord struct {
	BugID     string         `json:"bug_id"`
	Title     string         `json:"title"`
	UnitID    string         `json:"unit_id,omitempty"`
	Status    string         `json:"evidence_status"`
	Verified  []VerifiedItem `json:"verified"`
	Missing   []MissingItem  `json:"missing"`
	CheckedAt time.Time      `json:"checked_at"`
	CallID    string         `json:"call_id"`
}

// RecordPath is the evidence record of a bug.
func RecordPath(bugID string) string { return bugs.TriageRecordPath(bugID) }

const extractDescription = "Collect the evidence a bug cites and verify each citation where it says it is: " +
	"the failing test in the cited (or newest) Vitest report under reports/ or units/*/, the quoted stderr lines at or near the cited log line " +
	"(+/-5 lines, returned with the lines around them), and the failed steps of the cited case run (integration/runs/<run_id>.json). " +
	"Returns verified and missing citations with paths and line numbers, writes triage/<bug>.json and updates triage/triage.json."

// ExtractEvidence is the extract_evidence tool.
func ExtractEvidence() tool.Tool { return evidenceTool("extract_evidence", "Extract evidence") }

// VerifyEvidence is verify_evidence: the same tool under the name the
// agent prompts use when re-checking a bug.
func VerifyEvidence() tool.Tool { return evidenceTool("verify_evidence", "Verify evidence") }

func evidenceTool(name, title string) tool.Tool {
	return tool.New(tool.Spec{
		Name: name, Title: title, Description: extractDescription,
		Effect: tool.Destructive, Idempotent: true, Timeout: 30 * time.Second,
	}, extractEvidence)
}

// loadBug loads a bug or returns the expected failure the model can act on.
func loadBug(ctx context.Context, c *callctx.Ctx, id string) (*bugs.Bug, error) {
	b, err := c.Bugs.Get(ctx, id)
	switch {
	case errors.Is(err, bugs.ErrNotFound):
		return nil, tool.Fail(nil, "no bug %s in the project's bug tracker; list bugs with bug_list", id)
	case store.IsUnavailable(err):
		return nil, err
	case err != nil:
		return nil, tool.Fail(err, "bug %s cannot be loaded", id)
	}
	return b, nil
}

// cites reports whether an evidence entry names anything that can be checked.
func cites(e bugs.Evidence) bool {
	return e.Test != "" || e.TestFile != "" || e.Report != "" || e.Log != "" || e.LogFile != "" || e.RunID != ""
}

func extractEvidence(ctx context.Context, c *callctx.Ctx, in ExtractEvidenceInput) (ExtractEvidenceOutput, error) {
	bug, err := loadBug(ctx, c, in.BugID)
	if err != nil {
		return ExtractEvidenceOutput{}, err
	}
	if !citesAny(bug) {
		return ExtractEvidenceOutput{}, tool.Fail(nil, "no evidence cited: %s has no test, test_file, report, log, log_file or run_id in its evidence "+
			"(repro steps alone cannot be verified); add a citation to the bug before triaging it", bug.ID)
	}
	ev, err := collectEvidence(c, bug)
	if err != nil {
		return ExtractEvidenceOutput{}, err
	}
	st := ev.status()
	rec := EvidenceRecord{BugID: bug.ID, Title: bug.Title, UnitID: bug.UnitID, Status: st, Verified: ev.Verified,
		Missing: ev.Missing, CheckedAt: c.Clock.Now(), CallID: c.CallID}
	p := RecordPath(bug.ID)
	if err := c.Files.WriteJSON(p, rec); err != nil {
		return ExtractEvidenceOutput{}, fmt.Errorf("write %s: %w", p, err)
	}
	err = updateSummary(c, bug, func(e *SummaryEntry) {
		e.Evidence, e.EvidenceVerified, e.EvidenceMissing = st, len(ev.Verified), len(ev.Missing)
	})
	if err != nil {
		return ExtractEvidenceOutput{}, err
	}
	return ExtractEvidenceOutput{Status: tool.Status{OK: true}, BugID: bug.ID, Path: p, EvidenceStatus: st,
		Verified: ev.Verified, Missing: ev.Missing}, nil
}

func citesAny(b *bugs.Bug) bool {
	for _, e := range b.Evidence {
		if cites(e) {
			return true
		}
	}
	return false
}

// evidence is what collectEvidence found for one bug.
type evidence struct {
	Verified []VerifiedItem
	Missing  []MissingItem
	// Tests are the cited tests, for rules that look across reports.
	Tests []citedTest
	// Reports are the Vitest reports found, newest first (loaded at most once).
	reports []loadedReport
	loaded  bool
}

type citedTest struct{ Name, File string }

func (ev *evidence) status() string {
	switch {
	case len(ev.Missing) == 0:
		return statusVerified
	case len(ev.Verified) == 0:
		return statusUnverified
	default:
		return statusPartial
	}
}

func (ev *evidence) allReports(c *callctx.Ctx) ([]loadedReport, error) {
	if !ev.loaded {
		rs, err := findReports(c)
		if err != nil {
			return nil, err
		}
		ev.reports, ev.loaded = rs, true
	}
	return ev.reports, nil
}

// collectEvidence checks every citation of a bug. Only I/O failures of the
// project itself are errors; a citation that does not check out is a
// Missing item.
func collectEvidence(c *callctx.Ctx, bug *bugs.Bug) (*evidence, error) {
	ev := &evidence{Verified: []VerifiedItem{}, Missing: []MissingItem{}}
	// bug_open appends each duplicate report's evidence, so the same
	// citation often appears in several entries: check and list it once.
	type (
		testKey struct{ test, file, report string }
		logKey  struct {
			log, file string
			line      int
		}
	)
	seenTest, seenLog, seenRun := map[testKey]bool{}, map[logKey]bool{}, map[string]bool{}
	for _, e := range bug.Evidence {
		if tk := (testKey{e.Test, e.TestFile, e.Report}); (e.Test != "" || e.TestFile != "" || e.Report != "") && !seenTest[tk] {
			seenTest[tk] = true
			if err := ev.checkTest(c, bug, e); err != nil {
				return nil, err
			}
		}
		if lk := (logKey{e.Log, e.LogFile, e.LogLine}); (e.Log != "" || e.LogFile != "") && !seenLog[lk] {
			seenLog[lk] = true
			if err := ev.checkLog(c, e); err != nil {
				return nil, err
			}
		}
		if e.RunID != "" && !seenRun[e.RunID] {
			seenRun[e.RunID] = true
			ev.checkRun(c, e.RunID)
		}
	}
	return ev, nil
}

func (ev *evidence) miss(kind, cited, format string, args ...any) {
	ev.Missing = append(ev.Missing, MissingItem{Kind: kind, Cited: cited, Reason: fmt.Sprintf(format, args...)})
}

// checkTest finds the cited test (or, with only a test file cited, the
// file's first failure, a file-level one included) in the cited report, or
// in the newest report that names it, and checks the cited test file. A
// test that did not fail there is not evidence of the failure: it is
// missing, with the reason, never verified.
func (ev *evidence) checkTest(c *callctx.Ctx, bug *bugs.Bug, e bugs.Evidence) error {
	cited := e.Test
	if cited == "" {
		cited = e.TestFile
	}
	var found *testOutcome
	switch {
	case e.Report != "":
		data, err := readRel(c, e.Report)
		if err != nil {
			ev.miss(kindReport, e.Report, "cannot read the cited report: %s", readReason(c, err))
			break
		}
		run, err := vitest.Parse(data)
		if err != nil {
			ev.miss(kindReport, e.Report, "%s is not a readable Vitest JSON report (%v); cite the file written by vitest run --reporter=json", e.Report, err)
			break
		}
		lr := loadedReport{Path: e.Report, Run: run}
		outs := lr.outcomes()
		if found = pickOutcome(outs, e.Test, e.TestFile); found == nil {
			var failing []string
			for _, o := range outs {
				// Only the cited file's failures: another file's would
				// send the reader elsewhere.
				if o.Status == vitest.StatusFailed && len(failing) < 5 && (e.TestFile == "" || vitest.SameFile(o.File, e.TestFile)) {
					failing = append(failing, strconv.Quote(o.label()))
				}
			}
			scope := "there"
			if e.TestFile != "" {
				scope = "in " + e.TestFile
			}
			ev.miss(kindTest, cited, "report %s has no %s; failing tests %s: %s", e.Report, testDesc(e.Test, e.TestFile), scope, listOrNone(failing))
		}
	default:
		reports, err := ev.allReports(c)
		if err != nil {
			return err
		}
		for _, r := range reports {
			if found = pickOutcome(r.outcomes(), e.Test, e.TestFile); found != nil {
				break
			}
		}
		if found == nil {
			ev.miss(kindTest, cited, "no Vitest report under reports/ or units/*/ (%d searched) has a %s; cite the report with evidence.report or fix the test name", len(reports), testDesc(e.Test, e.TestFile))
		}
	}
	line := 0
	switch {
	case found != nil && found.Status != vitest.StatusFailed:
		ev.Tests = append(ev.Tests, citedTest{Name: found.Name, File: found.File})
		why := "cite a report where it fails, or re-run the suite"
		if fe := fileFailureOf(c, found); fe != nil {
			why = fmt.Sprintf("its file failed outside any test (%s: %s), which skipped it; cite that failure with evidence.test_file alone", fe.Level, vitest.FirstMeaningfulLine(fe.Message))
		}
		ev.miss(kindTest, cited, "not reproduced: the test %s in %s (the report cited, or the newest naming it), it did not fail; %s", found.Status, found.Report, why)
	case found != nil:
		ev.Tests = append(ev.Tests, citedTest{Name: found.Name, File: found.File})
		line = found.Line
		ev.Verified = append(ev.Verified, VerifiedItem{Kind: kindTest, Path: found.Report, Line: line,
			Excerpt: clip(found.Status+": "+found.label()+"\n"+found.Message, maxExcerpt)})
	case e.Test != "":
		ev.Tests = append(ev.Tests, citedTest{Name: e.Test, File: e.TestFile})
	}
	if e.TestFile != "" {
		ev.checkTestFile(c, bug, e.TestFile, line, found)
	}
	return nil
}

// fileFailureOf returns the file-level failure of o's file in o's report.
func fileFailureOf(c *callctx.Ctx, o *testOutcome) *testOutcome {
	data, err := readRel(c, o.Report)
	if err != nil {
		return nil
	}
	run, err := vitest.Parse(data)
	if err != nil {
		return nil
	}
	lr := loadedReport{Path: o.Report, Run: run}
	for _, x := range lr.outcomes() {
		if x.Name == "" && x.File == o.File {
			return &x
		}
	}
	return nil
}

// pickOutcome returns the cited test among a report's outcomes. When only
// a test file is cited, its first failure is the evidence (any outcome of
// the file if none failed).
func pickOutcome(outs []testOutcome, test, file string) *testOutcome {
	var first *testOutcome
	for i, o := range outs {
		if !matchTest(o, test, file) {
			continue
		}
		if test != "" || o.Status == vitest.StatusFailed {
			return &outs[i]
		}
		if first == nil {
			first = &outs[i]
		}
	}
	return first
}

// hookCall finds the line of a hook in a test file.
var hookCall = lazyre.New(`\b(beforeAll|afterAll|beforeEach|afterEach)\s*\(`)

// checkTestFile checks that a cited test file exists in the project (as
// given, or inside the bug's unit) and quotes its failing lines: the line
// the report names, else for a hook failure the hook, else the test's
// declaration.
func (ev *evidence) checkTestFile(c *callctx.Ctx, bug *bugs.Bug, file string, line int, found *testOutcome) {
	cands := []string{file}
	if filepath.IsAbs(file) {
		rel, ok := sandbox.Within(c.Files.ProjectDir(), file)
		if !ok {
			// A report's absolute path from another machine: the report
			// check above already matched it by suffix.
			return
		}
		cands = []string{rel}
	}
	if bug.UnitID != "" && callctx.ValidUnit(bug.UnitID) && !filepath.IsAbs(file) {
		cands = append(cands, "units/"+bug.UnitID+"/"+file)
	}
	var reasons []string
	for _, p := range cands {
		data, err := readRel(c, p)
		if err != nil {
			reasons = append(reasons, p+": "+readReason(c, err))
			continue
		}
		lines := splitLines(data)
		at := line
		if at <= 0 || at > len(lines) {
			at = failingLine(lines, found)
		}
		item := VerifiedItem{Kind: kindTestFile, Path: p}
		if at > 0 {
			item.Line, item.Excerpt = at, around(lines, at, 1)
		} else {
			item.Excerpt = fmt.Sprintf("%d lines; the report names no line in this file", len(lines))
		}
		ev.Verified = append(ev.Verified, item)
		return
	}
	ev.miss(kindTestFile, file, "cannot read the cited test file (%s); cite it relative to the project or to the bug's unit", strings.Join(reasons, "; "))
}

// failingLine finds where an outcome the report gives no line for sits in
// its test file: the first hook of a hook failure, the declaration of a
// test (0 when neither is found).
func failingLine(lines []string, o *testOutcome) int {
	if o == nil {
		return 0
	}
	if o.Level == vitest.LevelHook {
		for i, l := range lines {
			if hookCall().MatchString(l) {
				return i + 1
			}
		}
		return 0
	}
	// The full name is the describe blocks and the title; the declaration
	// quotes the title, the longest tail of the name found in a string.
	words := strings.Fields(o.Name)
	for k := range words {
		title := strings.Join(words[k:], " ")
		for i, l := range lines {
			for _, q := range []string{"'", `"`, "`"} {
				if strings.Contains(l, q+title+q) {
					return i + 1
				}
			}
		}
	}
	return 0
}

// checkLog verifies a quoted log excerpt at (or near) its cited line, or
// finds it under integration/logs/ when no file is cited.
func (ev *evidence) checkLog(c *callctx.Ctx, e bugs.Evidence) error {
	quote := excerptLines(e.Log)
	if e.LogFile == "" {
		if len(quote) == 0 {
			return nil
		}
		files, err := walkFiles(c, "integration/logs", func(string) bool { return true })
		if err != nil {
			return err
		}
		for _, f := range files {
			data, err := readRel(c, f)
			if err != nil {
				continue
			}
			lines := splitLines(data)
			if at := findQuote(lines, quote); len(at) > 0 {
				ev.Verified = append(ev.Verified, VerifiedItem{Kind: kindLog, Path: f, Line: at[0],
					Excerpt: around(lines, at[0], len(quote)), Detail: "no log_file was cited; the quote was found in " + f})
				return nil
			}
		}
		ev.miss(kindLog, clip(e.Log, 200), "no log_file is cited and the quoted text is in no file under integration/logs/ (%d searched); cite log_file and log_line", len(files))
		return nil
	}
	data, err := readRel(c, e.LogFile)
	if err != nil {
		ev.miss(kindLogFile, e.LogFile, "cannot read the cited log: %s", readReason(c, err))
		return nil
	}
	lines := splitLines(data)
	if len(quote) == 0 {
		if e.LogLine > len(lines) {
			ev.miss(kindLogFile, fmt.Sprintf("%s:%d", e.LogFile, e.LogLine), "log_line %d is past the end of %s (%d lines)", e.LogLine, e.LogFile, len(lines))
			return nil
		}
		at := e.LogLine
		if at == 0 {
			at = max(1, len(lines)-2*logContext)
		}
		ev.Verified = append(ev.Verified, VerifiedItem{Kind: kindLogFile, Path: e.LogFile, Line: at, Excerpt: around(lines, at, 1)})
		return nil
	}
	cited := e.LogFile
	if e.LogLine > 0 {
		cited = fmt.Sprintf("%s:%d", e.LogFile, e.LogLine)
	}
	at := findQuote(lines, quote)
	if len(at) == 0 {
		ev.miss(kindLog, cited, "the quoted text %q is not in %s (%d lines); quote the log exactly", clip(quote[0], 120), e.LogFile, len(lines))
		return nil
	}
	best := at[0]
	if e.LogLine > 0 {
		for _, l := range at {
			if abs(l-e.LogLine) < abs(best-e.LogLine) {
				best = l
			}
		}
		if abs(best-e.LogLine) > logLineWindow {
			ev.miss(kindLog, cited, "the quoted text is at line %d of %s, not within ±%d lines of the cited line %d; fix log_line", best, e.LogFile, logLineWindow, e.LogLine)
			return nil
		}
	}
	ev.Verified = append(ev.Verified, VerifiedItem{Kind: kindLog, Path: e.LogFile, Line: best, Excerpt: around(lines, best, len(quote))})
	return nil
}

// runIDPattern keeps a run id a single safe path segment.
var runIDPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// caseRun is integration/runs/<run_id>.json as the integrator writes it.
type caseRun struct {
	RunID string    `json:"run_id"`
	Case  string    `json:"case"`
	OK    *bool     `json:"ok"`
	Steps []runStep `json:"steps"`
}

type runStep struct {
	Index     *int            `json:"index"`
	Name      string          `json:"name"`
	Method    string          `json:"method"`
	URL       string          `json:"url"`
	OK        bool            `json:"ok"`
	Skipped   bool            `json:"skipped"`
	Status    int             `json:"status"`
	ElapsedMS int64           `json:"elapsed_ms"`
	Error     string          `json:"error"`
	Diff      json.RawMessage `json:"diff"`
}

// RunPath is the file of a case run.
func RunPath(id string) string { return "integration/runs/" + id + ".json" }

// checkRun verifies that a run exists and quotes its failed steps.
func (ev *evidence) checkRun(c *callctx.Ctx, id string) {
	if !runIDPattern().MatchString(id) || strings.Contains(id, "..") {
		ev.miss(kindRun, id, "run_id %q is not a run id (letters, digits, '.', '_', '-')", id)
		return
	}
	p := RunPath(id)
	data, err := readRel(c, p)
	if err != nil {
		ev.miss(kindRun, id, "cannot read %s: %s", p, readReason(c, err))
		return
	}
	var run caseRun
	if err := json.Unmarshal(data, &run); err != nil || run.Steps == nil {
		ev.miss(kindRun, id, "%s is not a case run (expected {steps:[{name, ok, status, elapsed_ms, diff}]})", p)
		return
	}
	lines := splitLines(data)
	failed := 0
	for _, s := range run.Steps {
		// A skipped step never ran: the failure is the step before it.
		if s.OK || s.Skipped {
			continue
		}
		failed++
		ev.Verified = append(ev.Verified, VerifiedItem{Kind: kindRunStep, Path: p, Line: stepLine(lines, s),
			Excerpt: clip(describeStep(s), maxExcerpt)})
	}
	if failed == 0 {
		ev.Verified = append(ev.Verified, VerifiedItem{Kind: kindRun, Path: p, Line: 1,
			Excerpt: fmt.Sprintf("all %d steps passed", len(run.Steps)), Detail: "the run exists but passed; it does not show the failure"})
	}
}

// describeStep says which step failed and why, in words: its index and
// name, the request, the status, the error and each mismatch.
func describeStep(s runStep) string {
	var b strings.Builder
	b.WriteString("step")
	if s.Index != nil {
		fmt.Fprintf(&b, " %d", *s.Index)
	}
	if s.Name != "" {
		fmt.Fprintf(&b, " %q", s.Name)
	}
	if s.Method != "" || s.URL != "" {
		fmt.Fprintf(&b, " (%s)", strings.TrimSpace(s.Method+" "+s.URL))
	}
	b.WriteString(" failed:")
	var why []string
	if s.Status > 0 {
		why = append(why, fmt.Sprintf("status %d", s.Status))
	}
	if s.Error != "" {
		why = append(why, s.Error)
	}
	if d := diffText(s.Diff); d != "" {
		why = append(why, d)
	}
	if len(why) == 0 {
		why = append(why, "no reason recorded")
	}
	b.WriteString(" " + strings.Join(why, "; "))
	return b.String()
}

// diffText renders a step's diff: a string as is, run_case's list of
// mismatches as their messages, anything else as JSON.
func diffText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var ms []struct {
		Check   string `json:"check"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &ms) == nil {
		var parts []string
		for _, m := range ms {
			switch {
			case m.Message != "" && m.Check != "":
				parts = append(parts, fmt.Sprintf("%s (%s)", m.Message, m.Check))
			case m.Message != "":
				parts = append(parts, m.Message)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) == nil {
		return compact.String()
	}
	return string(raw)
}

// stepLine is the line where a step starts in the run file: its "index"
// (run_case writes one per step) or else its "name" (0 if neither is found).
func stepLine(lines []string, s runStep) int {
	if s.Index != nil {
		want := fmt.Sprintf(`"index": %d`, *s.Index)
		inSteps := false
		for i, l := range lines {
			t := strings.TrimSuffix(strings.TrimSpace(l), ",")
			if strings.HasPrefix(t, `"steps"`) {
				inSteps = true
			}
			if inSteps && t == want {
				return i + 1
			}
		}
	}
	if s.Name == "" {
		return 0
	}
	q, _ := json.Marshal(s.Name)
	for i, l := range lines {
		if strings.Contains(l, `"name"`) && strings.Contains(l, string(q)) {
			return i + 1
		}
	}
	return 0
}

// excerptLines splits a quoted excerpt into its non-blank lines, trimmed.
func excerptLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if t := strings.TrimSpace(l); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// findQuote returns every 1-based line where the quote starts: its first
// line is contained in the log line and each next quoted line in the next
// non-blank log line.
func findQuote(lines, quote []string) []int {
	var at []int
	for i := range lines {
		if !strings.Contains(lines[i], quote[0]) {
			continue
		}
		j, k := i+1, 1
		for k < len(quote) && j < len(lines) {
			if strings.TrimSpace(lines[j]) == "" {
				j++
				continue
			}
			if !strings.Contains(lines[j], quote[k]) {
				break
			}
			j, k = j+1, k+1
		}
		if k == len(quote) {
			at = append(at, i+1)
		}
	}
	return at
}

// around returns the lines of a quote (starting at 1-based line at, n lines
// long) with logContext lines either side.
func around(lines []string, at, n int) string {
	from := max(1, at-logContext)
	to := min(len(lines), at+n-1+logContext)
	return clip(strings.Join(lines[from-1:to], "\n"), maxExcerpt)
}

// readReason is what the model reads of a cited file that could not be
// read.
func readReason(c *callctx.Ctx, err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "file does not exist"
	}
	return tool.Explain(c, err)
}

// testDesc names a cited test for messages.
func testDesc(test, file string) string {
	switch {
	case test == "":
		return "test from " + file
	case file == "":
		return "test " + strconv.Quote(test)
	default:
		return "test " + strconv.Quote(test) + " in " + file
	}
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
