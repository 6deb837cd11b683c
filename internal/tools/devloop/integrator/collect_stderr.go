package integrator

import (
	"context"

	"github.com/toolhost/toolhost/internal/callctx"
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

// Signature is one error found in a log — a Node error with its stack, a Go
// panic with its goroutine trace, a Python traceback with its causes, a Rust
// panic, a heap out of memory, a process the shell saw killed — once,
// however many of its lines name it and however often it was printed.
type Signature struct {
	Kind     string   `json:"kind" jsonschema:"enum=go_panic,enum=node_error,enum=module_not_found,enum=unhandled_rejection,enum=python_traceback,enum=eaddrinuse,enum=rust_panic,enum=out_of_memory,enum=killed" jsonschema_description:"what was detected: go_panic (a panic, a fatal error, or a net/http handler panic), a Node error (module_not_found, eaddrinuse, unhandled_rejection, else node_error), python_traceback, rust_panic, out_of_memory (V8's heap limit), killed (the shell reports the process killed by a signal: Killed, Segmentation fault, Aborted ...)"`
	Line     int      `json:"line" jsonschema_description:"1-based line number where it starts (its first time)"`
	Text     string   `json:"text" jsonschema_description:"the line that starts it"`
	Summary  string   `json:"summary,omitempty" jsonschema_description:"the line that names the error, when it is not the first one (Python's final exception line, the Error line after Node's source excerpt, a Rust panic's message, V8's FATAL ERROR line), or what a net/http panic or a signal means"`
	Cause    string   `json:"cause,omitempty" jsonschema_description:"a chained Python exception's first exception (the one the others were raised while handling, or from)"`
	At       string   `json:"at,omitempty" jsonschema_description:"file:line of the first frame in the program's own code, where it crashed (not the runtime's or the standard library's)"`
	Count    int      `json:"count" jsonschema_description:"how many times the same error was printed since the unit's last start (a server that logs one traceback per request)"`
	LastLine int      `json:"last_line,omitempty" jsonschema_description:"line where it was printed last, when more than once"`
	Trace    []string `json:"trace,omitempty" jsonschema_description:"the lines that belong to it, at most 30: Node's Require stack and frames, the Go goroutine traces, the Python frames of every chained exception, the Rust backtrace, V8's native stack"`
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
			"last start, each once (with how often it was printed) with its line number, trace and the frame in the unit's own code: " +
			"Go panics and fatal errors with their goroutine traces (net/http handler panics too), Node errors with their stack " +
			"(MODULE_NOT_FOUND with its Require stack, EADDRINUSE, unhandled promise rejections), V8 heap out of memory, Python tracebacks " +
			"(a chained exception as one, with its cause), Rust panics, and a process the shell reports killed (Killed, Segmentation fault ...).",
		Effect: tool.ReadOnly,
	}, collectStderr)
}

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
