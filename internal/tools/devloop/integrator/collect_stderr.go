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
	Units     []string `json:"units,omitempty" jsonschema:"maxItems=50,pattern=^[A-Za-z0-9][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"units to read (default: every unit in integration/units.json or with a log in integration/logs/)"`
	TailLines int      `json:"tail_lines,omitempty" jsonschema:"minimum=1,maximum=2000" jsonschema_description:"how many last lines per unit (default 50)"`
}

// LogLine is one numbered log line.
type LogLine struct {
	N    int    `json:"n" jsonschema_description:"1-based line number in the log file"`
	Text string `json:"text" jsonschema_description:"the line"`
}

// Signature is an error pattern found in a log.
type Signature struct {
	Kind    string `json:"kind" jsonschema:"enum=go_panic,enum=node_error,enum=unhandled_rejection,enum=python_traceback,enum=eaddrinuse" jsonschema_description:"what was detected"`
	Line    int    `json:"line" jsonschema_description:"1-based line number where it starts"`
	Text    string `json:"text" jsonschema_description:"the line"`
	Summary string `json:"summary,omitempty" jsonschema_description:"the line that names the error, when it is not the first one (Python's final exception line)"`
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
	Units []UnitStderr `json:"units" jsonschema_description:"one entry per unit"`
}

// CollectStderr is the collect_stderr tool.
func CollectStderr() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "collect_stderr",
		Title: "Collect unit stderr",
		Description: "The last lines of each unit's integration/logs/<id>.err.log, with error signatures found since the unit's " +
			"last start (Go panics, Node errors with a stack, unhandled promise rejections, Python tracebacks, EADDRINUSE), " +
			"each with its line number.",
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
	nodeErrorRE = lazyre.New(`^\s*(Uncaught\s+)?([A-Z][A-Za-z0-9]*)?(Error|Exception)( \[[A-Z0-9_]+\])?: `)
	stackLineRE = lazyre.New(`^\s+at \S`)
	rejectionRE = lazyre.New(`(?i)unhandled ?promise ?rejection|unhandledRejection`)
	tracebackRE = lazyre.New(`^Traceback \(most recent call last\):`)
	addrInUseRE = lazyre.New(`EADDRINUSE|(?i:address already in use)`)
)

// detect finds error signatures in numbered lines.
func detect(lines []numbered) []Signature {
	sigs := []Signature{}
	add := func(kind string, l numbered, summary string) {
		if len(sigs) < maxSignatures {
			sigs = append(sigs, Signature{Kind: kind, Line: l.N, Text: l.Text, Summary: summary})
		}
	}
	for i, l := range lines {
		switch {
		case goPanicRE().MatchString(l.Text):
			add("go_panic", l, "")
		case tracebackRE().MatchString(l.Text):
			add("python_traceback", l, tracebackSummary(lines[i+1:]))
		case nodeErrorRE().MatchString(l.Text) && nextIsStack(lines[i+1:]):
			add("node_error", l, "")
		}
		if rejectionRE().MatchString(l.Text) {
			add("unhandled_rejection", l, "")
		}
		if addrInUseRE().MatchString(l.Text) {
			add("eaddrinuse", l, "")
		}
	}
	return sigs
}

// nextIsStack reports whether the next non-empty line is a JS stack frame.
func nextIsStack(rest []numbered) bool {
	for _, l := range rest {
		if strings.TrimSpace(l.Text) == "" {
			continue
		}
		return stackLineRE().MatchString(l.Text)
	}
	return false
}

// tracebackSummary is the first unindented line after a Python traceback
// header: the exception and its message.
func tracebackSummary(rest []numbered) string {
	for i, l := range rest {
		if i > 500 {
			break
		}
		if l.Text != "" && l.Text[0] != ' ' && l.Text[0] != '\t' {
			return l.Text
		}
	}
	return ""
}
