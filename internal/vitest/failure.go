package vitest

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// Where a failure happened.
const (
	// LevelTest is a failed test.
	LevelTest = "test"
	// LevelLoad is a test file that failed to load (an import or syntax
	// error): none of its tests exist in the report.
	LevelLoad = "load"
	// LevelHook is an error outside any test of a file that loaded: a
	// beforeAll that failed (its tests were skipped) or an afterAll.
	LevelHook = "hook"
)

// Failure kinds: what the error is.
const (
	KindAssertion      = "assertion"
	KindSnapshot       = "snapshot"
	KindTypeError      = "type_error"
	KindReferenceError = "reference_error"
	KindSyntaxError    = "syntax_error"
	KindTimeout        = "timeout"
	KindImportError    = "import_error"
	KindTypeCheck      = "typecheck"
	KindError          = "error"
)

// Kinds lists every kind, in the order hint_builder ranks equally
// widespread causes: a file that does not load hides every test in it, so
// import and syntax errors come first.
var Kinds = []string{KindImportError, KindSyntaxError, KindTypeCheck, KindReferenceError, KindTypeError, KindTimeout, KindAssertion, KindSnapshot, KindError}

// Failure is one thing that failed in a run.
type Failure struct {
	File  string // the test file as the report names it
	Test  string // full test name; "" for a file-level failure
	Level string // LevelTest, LevelLoad or LevelHook
	Kind  string
	// Message is the first meaningful line of the error, colour codes
	// removed.
	Message string
	// Text is the whole failure text, colour codes removed.
	Text string
	// Line is the line in the test file where it shows: the first stack
	// frame in that file, else the test's declaration (0 when unknown).
	Line int
	// Thrown is "file:line" of the first stack frame outside the test file
	// and node_modules — where the error was thrown when that is not the
	// test itself ("" when it was, or when the report does not say).
	Thrown string
}

// StackTraceMarker is the message Vitest 3 puts in the JSON report for a
// test or hook timeout: the error is created early to capture the stack and
// its message is replaced later, but the reporter prints the stack string.
const StackTraceMarker = "STACK_TRACE_ERROR"

// testFailures turns each error of a failed test into a failure; errors at
// the same line of the test file (a retried assertion) are one.
func testFailures(file string, t Test, a Assertion, declared bool) []*Failure {
	var out []*Failure
	seen := map[string]bool{}
	for _, msg := range a.FailureMessages {
		text := StripANSI(msg)
		f := testFailure(file, t, text, a, declared)
		// Where in the test file the error shows tells one assertion
		// from another; without a stack (Vitest 1) the message does.
		key := f.Message
		if line := frameLineIn(Frames(text), file); line > 0 {
			key = fmt.Sprint(line)
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, f)
	}
	if len(out) == 0 {
		out = append(out, testFailure(file, t, "", a, declared))
	}
	return out
}

func testFailure(file string, t Test, text string, a Assertion, declared bool) *Failure {
	f := &Failure{File: file, Test: t.Name, Level: LevelTest, Text: text, Message: FirstMeaningfulLine(text)}
	f.Kind = Classify(f.Message)
	if f.Kind == KindTimeout && strings.Contains(f.Message, StackTraceMarker) {
		f.Message = "Test timed out (Vitest's JSON report shows a timeout as " + StackTraceMarker + ")"
	}
	if f.Message == "" {
		f.Message = "the test failed without a message"
	}
	frames := Frames(text)
	f.Line = frameLineIn(frames, file)
	f.Thrown = thrownAt(frames, file)
	switch {
	case f.Line > 0:
	case declared:
		f.Line = t.DeclaredAt
	case a.Location != nil && (f.Kind == KindAssertion || f.Kind == KindSnapshot):
		// Vitest 1: the location is where the error was thrown, in a file
		// it does not name. An expect() throws in the test itself; any
		// other error may come from the code under test, so its line is not
		// claimed for the test file.
		f.Line = a.Location.Line
	}
	return f
}

// droppedHookError is the message of a file that failed with no failing
// test and no error in the report.
const droppedHookError = "the file failed but no test failed and Vitest's JSON report carries no error: " +
	"a beforeAll/afterAll hook inside a describe block failed (the JSON report drops its error; " +
	"Vitest's console output shows it under \"Failed Suites\")"

// fileFailure is the file-level failure of a file whose status is failed,
// or nil when its failed tests explain the status.
func fileFailure(f File, message string, ran int) *Failure {
	text := StripANSI(message)
	msg := FirstMeaningfulLine(text)
	if strings.HasSuffix(msg, ":") {
		// "Transform failed with 1 error:" says what follows.
		if _, rest, ok := strings.Cut(text, msg); ok {
			if next := FirstMeaningfulLine(rest); next != "" {
				msg += " " + next
			}
		}
	}
	level := LevelHook
	switch {
	case len(f.Tests) == 0:
		level = LevelLoad
		if msg == "" {
			msg = "the test file failed to load (Vitest gave no message)"
		}
	case msg != "":
	case ran == 0 || !anyFailed(f.Tests):
		msg, text = droppedHookError, droppedHookError
	default:
		return nil
	}
	e := &Failure{File: f.Name, Level: level, Message: msg, Text: text, Kind: Classify(msg)}
	if level == LevelLoad && e.Kind == KindError {
		// A file that does not load fails at an import, a transform or
		// its top-level code; the transform's own words say which.
		if reTransform().MatchString(text) {
			e.Kind = KindSyntaxError
		}
	}
	frames := Frames(text)
	e.Line = frameLineIn(frames, f.Name)
	if e.Line == 0 {
		e.Line = transformLine(text, f.Name)
	}
	e.Thrown = thrownAt(frames, f.Name)
	return e
}

func anyFailed(ts []Test) bool {
	for _, t := range ts {
		if t.Status == StatusFailed {
			return true
		}
	}
	return false
}

var ansi = lazyre.New(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// StripANSI removes terminal colour and cursor codes.
func StripANSI(s string) string { return ansi().ReplaceAllString(s, "") }

var frameStart = lazyre.New(`^\s*at\s`)

// FirstMeaningfulLine is the first line of s that is neither blank, a stack
// frame nor a rule, without colour codes.
func FirstMeaningfulLine(s string) string {
	for _, l := range strings.Split(StripANSI(s), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || frameStart().MatchString(l) || strings.Trim(l, "-=*⎯ ") == "" {
			continue
		}
		return l
	}
	return ""
}

// Frame is one V8 stack frame that names a file.
type Frame struct {
	Func string
	File string // file:// removed
	Line int
	Col  int
}

var frameRE = lazyre.New(`^\s*at (?:(.*?) \()?(?:file://)?([^\s()]+?):(\d+):(\d+)\)?\s*$`)

// Frames returns the stack frames in text that name a file and line, in
// order.
func Frames(text string) []Frame {
	var out []Frame
	for _, l := range strings.Split(text, "\n") {
		m := frameRE().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[3])
		col, _ := strconv.Atoi(m[4])
		out = append(out, Frame{Func: m[1], File: m[2], Line: line, Col: col})
	}
	return out
}

// Internal reports whether a frame is in a dependency or the runtime, not
// in the project's code.
func (fr Frame) Internal() bool {
	return strings.Contains(fr.File, "/node_modules/") || strings.HasPrefix(fr.File, "node:") ||
		strings.HasPrefix(fr.File, "internal/") || !strings.ContainsAny(fr.File, "/\\")
}

// SameFile compares a report's (usually absolute) file path with another
// (absolute or relative): equal, or one ends with "/"+other.
func SameFile(a, b string) bool {
	a, b = path.Clean(strings.TrimPrefix(a, "file://")), path.Clean(strings.TrimPrefix(b, "file://"))
	return a == b || strings.HasSuffix(a, "/"+b) || strings.HasSuffix(b, "/"+a)
}

func frameLineIn(frames []Frame, file string) int {
	for _, fr := range frames {
		if SameFile(fr.File, file) {
			return fr.Line
		}
	}
	return 0
}

// thrownAt is the first frame of the project's own code, when it is not the
// test file.
func thrownAt(frames []Frame, file string) string {
	for _, fr := range frames {
		if fr.Internal() {
			continue
		}
		if SameFile(fr.File, file) {
			return ""
		}
		return fr.File + ":" + strconv.Itoa(fr.Line)
	}
	return ""
}

var (
	reTransform   = lazyre.New(`(?i)transform failed|\[PARSE_ERROR\]|ERROR: Expected|Unexpected token|SyntaxError`)
	reTransformAt = lazyre.New(`([^\s\[\]()]+\.[cm]?[jt]sx?):(\d+):\d+`)
)

// transformLine finds "file:line:col" of a transform (syntax) error naming
// the test file.
func transformLine(text, file string) int {
	for _, m := range reTransformAt().FindAllStringSubmatch(text, -1) {
		if SameFile(m[1], file) {
			n, _ := strconv.Atoi(m[2])
			return n
		}
	}
	return 0
}

// kindRules decide a message's kind, the first match winning. Vitest 1
// keeps only the message, so the words matter, not the error's class name.
var kindRules = []struct {
	kind string
	re   func() *regexp.Regexp
}{
	{KindSnapshot, lazyre.New(`(?i)snapshot .*mismatched|toMatch(Inline)?Snapshot|obsolete snapshot`)},
	{KindTimeout, lazyre.New(`(?i)(test|hook) timed out|timed out in \d+\s*ms|` + StackTraceMarker)},
	{KindImportError, lazyre.New(`(?i)cannot find (module|package)|failed to (load|resolve) (url|import|module)|does not provide an export named|ERR_MODULE_NOT_FOUND|MODULE_NOT_FOUND|is not exported by|Failed to resolve entry`)},
	{KindTypeCheck, lazyre.New(`^TypeCheckError\b|\bTS\d{4}\b`)},
	{KindReferenceError, lazyre.New(`^ReferenceError\b|^\S+ is not defined$`)},
	{KindTypeError, lazyre.New(`^TypeError\b|(?i)cannot read propert(y|ies) of (undefined|null)|\bis not a function\b|\bis not a constructor\b|\bis not iterable\b|cannot set propert(y|ies) of`)},
	{KindSyntaxError, lazyre.New(`^SyntaxError\b|Unexpected token|is not valid JSON|(?i)transform failed|\[PARSE_ERROR\]`)},
	{KindAssertion, lazyre.New(`^(AssertionError|AssertionError \[ERR_ASSERTION\])\b|^expected .+ to |^Error: expect\(`)},
}

// Classify returns the kind a failure message shows.
func Classify(msg string) string {
	msg = StripANSI(msg)
	for _, r := range kindRules {
		if r.re().MatchString(msg) {
			return r.kind
		}
	}
	return KindError
}
