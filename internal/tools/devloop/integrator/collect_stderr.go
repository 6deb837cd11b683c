package integrator

import (
	"context"
	"strings"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/lazyre"
	"github.com/toolhost/toolhost/internal/tool"
)

// CollectStderrInput is the collect_stderr request.
type CollectStderrInput struct {
	Units     []string `json:"units,omitempty" jsonschema:"maxItems=50,pattern=^[A-Za-z0-9][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"units to read (default: every unit in .toolhost/units.json or with a log in integration/logs/)"`
	TailLines int      `json:"tail_lines,omitempty" jsonschema:"minimum=1,maximum=2000" jsonschema_description:"how many last lines per unit (default 50)"`
	tool.Page
}

// LogLine is one numbered log line.
type LogLine struct {
	N    int    `json:"n" jsonschema_description:"1-based line number in the log file"`
	Text string `json:"text" jsonschema_description:"the line"`
}

// Signature is one error found in a log: a Node error with its stack, a Go
// panic with its goroutine trace, a Python traceback — each once, however
// many of its lines name it.
type Signature struct {
	Kind    string   `json:"kind" jsonschema:"enum=go_panic,enum=node_error,enum=module_not_found,enum=unhandled_rejection,enum=python_traceback,enum=eaddrinuse" jsonschema_description:"what was detected: a Node error is module_not_found, eaddrinuse or unhandled_rejection when it is one of those, else node_error"`
	Line    int      `json:"line" jsonschema_description:"1-based line number where it starts"`
	Text    string   `json:"text" jsonschema_description:"the line that starts it"`
	Summary string   `json:"summary,omitempty" jsonschema_description:"the line that names the error, when it is not the first one (Python's final exception line, the Error line after Node's source excerpt)"`
	Trace   []string `json:"trace,omitempty" jsonschema_description:"the lines that belong to it, at most 30: Node's Require stack and frames, the Go goroutine trace, the Python frames"`
}

// UnitStderr is the stderr digest of one unit.
type UnitStderr struct {
	Unit       string      `json:"unit" jsonschema_description:"unit id"`
	Path       string      `json:"path" jsonschema_description:"project-relative stderr log"`
	Exists     bool        `json:"exists" jsonschema_description:"false when the unit has no stderr log"`
	TotalLines int         `json:"total_lines" jsonschema_description:"lines in the log"`
	Tail       []LogLine   `json:"tail" jsonschema_description:"the last lines"`
	Signatures []Signature `json:"signatures" jsonschema_description:"error signatures found since the unit's last start"`
}

// CollectStderrOutput is the collect_stderr result.
type CollectStderrOutput struct {
	tool.Status
	Units     []UnitStderr    `json:"units" page:"1" jsonschema_description:"one entry per unit"`
	Truncated *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// CollectStderr is the collect_stderr tool.
func CollectStderr() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "collect_stderr",
		Title: "Collect unit stderr",
		Description: "The last lines of each unit's integration/logs/<id>.err.log, with the errors found since the unit's " +
			"last start, each once with its line number and trace: Go panics with their goroutine trace, Node errors with their stack " +
			"(MODULE_NOT_FOUND with its Require stack, EADDRINUSE, unhandled promise rejections), Python tracebacks.",
		Effect: tool.ReadOnly,
	}, collectStderr)
}

// maxSignatures bounds the signatures listed per unit.
const maxSignatures = 100

func collectStderr(_ context.Context, c *callctx.Ctx, in CollectStderrInput) (CollectStderrOutput, error) {
	n := in.TailLines
	if n == 0 {
		n = 50
	}
	ids := in.Units
	if len(ids) == 0 {
		var err error
		if ids, err = knownUnits(c); err != nil {
			return CollectStderrOutput{}, err
		}
	}
	out := CollectStderrOutput{Status: tool.Status{OK: true}, Units: []UnitStderr{}}
	for _, id := range ids {
		lines, exists, err := readLog(c, ErrLog(id))
		if err != nil {
			return CollectStderrOutput{}, err
		}
		u := UnitStderr{Unit: id, Path: ErrLog(id), Exists: exists, TotalLines: len(lines), Tail: []LogLine{}}
		for _, l := range tail(lines, n) {
			u.Tail = append(u.Tail, LogLine(l))
		}
		u.Signatures = detect(currentRun(lines))
		out.Units = append(out.Units, u)
	}
	return out, nil
}

var (
	goPanicRE   = lazyre.New(`^(panic: |fatal error: )`)
	nodeErrorRE = lazyre.New(`^\s*(Uncaught\s+)?([A-Z][A-Za-z0-9]*)?(Error|Exception|Rejection)( \[[A-Z0-9_]+\])?: `)
	stackLineRE = lazyre.New(`^\s+at \S`)
	rejectionRE = lazyre.New(`(?i)unhandled ?promise ?rejection|unhandledRejection|ERR_UNHANDLED_REJECTION`)
	tracebackRE = lazyre.New(`^Traceback \(most recent call last\):`)
	addrInUseRE = lazyre.New(`EADDRINUSE|(?i:address already in use)`)
	moduleRE    = lazyre.New(`MODULE_NOT_FOUND|Cannot find (?:module|package) `)
	// Lines Node prints inside one error's report: its Require stack, the
	// properties object after the stack, the emitted-event trailer.
	nodeBlockRE = lazyre.New(`^(Require stack:|- |\s+at |\s*[a-zA-Z]+: .*,?$|\s*\}|Emitted '[a-z]+' event|\s*\{|\s*\]|\s*requireStack: )`)
)

// maxTrace bounds the lines a signature carries.
const maxTrace = 30

// detect finds error signatures in numbered lines. Each error is found once:
// the lines of its report (stack, properties, Require stack) are part of it,
// not errors of their own.
func detect(lines []numbered) []Signature {
	sigs := []Signature{}
	add := func(sg Signature) {
		if len(sigs) < maxSignatures {
			sigs = append(sigs, sg)
		}
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if errAt := nodeExcerptEnd(lines, i); errAt > 0 {
			// Node shows the source line that threw first: the report
			// starts there, the Error line after the caret names it.
			end := nodeBlockEnd(lines, errAt)
			sg := nodeSignature(lines, errAt, end)
			sg.Line, sg.Text, sg.Summary = l.N, l.Text, lines[errAt].Text
			add(sg)
			i = end - 1
			continue
		}
		switch {
		case goPanicRE().MatchString(l.Text):
			end := goTraceEnd(lines, i)
			add(Signature{Kind: "go_panic", Line: l.N, Text: l.Text, Trace: texts(lines[i+1 : end])})
			i = end - 1
		case tracebackRE().MatchString(l.Text):
			end, summary := tracebackEnd(lines, i)
			add(Signature{Kind: "python_traceback", Line: l.N, Text: l.Text, Summary: summary, Trace: texts(lines[i+1 : end])})
			i = end - 1
		case nodeErrorRE().MatchString(l.Text) && (nextIsStack(lines[i+1:]) || rejectionRE().MatchString(l.Text)):
			end := nodeBlockEnd(lines, i)
			add(nodeSignature(lines, i, end))
			i = end - 1
		case rejectionRE().MatchString(l.Text):
			add(Signature{Kind: "unhandled_rejection", Line: l.N, Text: l.Text})
		case addrInUseRE().MatchString(l.Text):
			add(Signature{Kind: "eaddrinuse", Line: l.N, Text: l.Text})
		}
	}
	for i := range sigs {
		if len(sigs[i].Trace) > maxTrace {
			sigs[i].Trace = sigs[i].Trace[:maxTrace]
		}
	}
	return sigs
}

// nodeSignature is the Node error report lines[i:end], named by what it
// says.
func nodeSignature(lines []numbered, i, end int) Signature {
	block := texts(lines[i:end])
	all := strings.Join(block, "\n")
	kind := "node_error"
	switch {
	case moduleRE().MatchString(all):
		kind = "module_not_found"
	case addrInUseRE().MatchString(all):
		kind = "eaddrinuse"
	case rejectionRE().MatchString(all):
		kind = "unhandled_rejection"
	}
	return Signature{Kind: kind, Line: lines[i].N, Text: lines[i].Text, Trace: block[1:]}
}

var (
	excerptHeadRE  = lazyre.New(`^(?:node:)?[^\s]+:\d+$`)
	excerptCaretRE = lazyre.New(`^\s*\^+\s*$`)
)

// nodeExcerptEnd recognises Node's source excerpt at i ("file:line", the
// source line, a caret line) and returns the index of the Error line that
// follows it, or 0.
func nodeExcerptEnd(lines []numbered, i int) int {
	if !excerptHeadRE().MatchString(lines[i].Text) {
		return 0
	}
	for j := i + 1; j < len(lines) && j <= i+4; j++ {
		if !excerptCaretRE().MatchString(lines[j].Text) {
			continue
		}
		for k := j + 1; k < len(lines) && k <= j+3; k++ {
			if nodeErrorRE().MatchString(lines[k].Text) {
				return k
			}
		}
		return 0
	}
	return 0
}

func texts(ls []numbered) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Text
	}
	return out
}

// nodeBlockEnd is the index after the last line of the Node error report
// that starts at i.
func nodeBlockEnd(lines []numbered, i int) int {
	j := i + 1
	for j < len(lines) && (strings.TrimSpace(lines[j].Text) == "" && j+1 < len(lines) && nodeBlockRE().MatchString(lines[j+1].Text) ||
		nodeBlockRE().MatchString(lines[j].Text)) {
		j++
	}
	return j
}

// goTraceEnd is the index after a Go panic's goroutine traces: goroutine
// headers, function lines and their tab-indented file lines, blank lines
// between goroutines, and the "exit status" line.
func goTraceEnd(lines []numbered, i int) int {
	j := i + 1
	for j < len(lines) {
		t := lines[j].Text
		switch {
		case t == "", strings.HasPrefix(t, "goroutine "), strings.HasPrefix(t, "\t"), strings.HasPrefix(t, "[signal "),
			strings.HasPrefix(t, "exit status "), strings.HasPrefix(t, "created by "),
			strings.HasSuffix(t, ")") && strings.Contains(t, "(") && !strings.Contains(t, " "):
			j++
		case strings.HasPrefix(t, "panic: ") && strings.HasSuffix(lines[j-1].Text, "[recovered]"):
			j++
		default:
			return j
		}
	}
	return j
}

// tracebackEnd is the index after a Python traceback and its summary: the
// first unindented line after the header names the exception.
func tracebackEnd(lines []numbered, i int) (int, string) {
	for j := i + 1; j < len(lines) && j-i <= 500; j++ {
		t := lines[j].Text
		if t != "" && t[0] != ' ' && t[0] != '\t' {
			return j + 1, t
		}
	}
	return min(len(lines), i+1), ""
}

// nextIsStack reports whether the next non-empty line (past Node's
// Require stack) is a JS stack frame.
func nextIsStack(rest []numbered) bool {
	for _, l := range rest {
		t := strings.TrimSpace(l.Text)
		if t == "" || t == "Require stack:" || strings.HasPrefix(t, "- ") {
			continue
		}
		return stackLineRE().MatchString(l.Text)
	}
	return false
}
