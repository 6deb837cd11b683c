package integrator

import (
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/internal/util/lazyre"
	"github.com/toolhost/toolhost/internal/vitest"
)

// The error signatures of a unit's stderr, as the runtimes print them. Each
// reader below knows where one runtime's report starts and which lines
// belong to it, so the lines of one crash are one signature; the same crash
// printed again (a server that logs each failing request) is counted, not
// listed again.

// Signature kinds.
const (
	SigGoPanic        = "go_panic"
	SigNodeError      = "node_error"
	SigModuleNotFound = "module_not_found"
	SigUnhandled      = "unhandled_rejection"
	SigPython         = "python_traceback"
	SigAddrInUse      = "eaddrinuse"
	SigRustPanic      = "rust_panic"
	SigOutOfMemory    = "out_of_memory"
	SigKilledBySignal = "killed"
)

const (
	// maxSignatures bounds the distinct errors listed per unit, maxTrace
	// the lines each carries.
	maxSignatures = 100
	maxTrace      = 30
	// maxTracebackLength bounds how far a Python traceback's summary is
	// looked for.
	maxTracebackLength = 500
)

var (
	goPanicRE = lazyre.New(`^(panic: |fatal error: )`)
	// net/http recovers a handler's panic and logs it (after the server's
	// log prefix) with the goroutine trace right below.
	goHTTPPanicRE = lazyre.New(`\bhttp: panic serving (\S+): (.*)$`)
	// A Go traceback: goroutine headers, function lines (package path,
	// then the call), their tab-indented file lines, and the runtime's
	// own markers.
	goFuncLineRE = lazyre.New(`^(?:(?:[\w.\-]+/)*[\w.\-]+\.[^\s(]*\(.*\)|panic\(.*\))(?: \.\.\.)?$`)
	goFrameRE    = lazyre.New(`^\t(\S+\.go:\d+)(?: \+0x[0-9a-f]+)?$`)
	nodeErrorRE  = lazyre.New(`^\s*(Uncaught\s+)?([A-Z][A-Za-z0-9]*)?(Error|Exception|Rejection)( \[[A-Z0-9_]+\])?: `)
	stackLineRE  = lazyre.New(`^\s+at \S`)
	rejectionRE  = lazyre.New(`(?i)unhandled ?promise ?rejection|unhandledRejection|ERR_UNHANDLED_REJECTION`)
	tracebackRE  = lazyre.New(`^Traceback \(most recent call last\):`)
	pyChainRE    = lazyre.New(`^(During handling of the above exception, another exception occurred|The above exception was the direct cause of the following exception):$`)
	pyFileRE     = lazyre.New(`^\s+File "([^"]+)", line (\d+)`)
	addrInUseRE  = lazyre.New(`EADDRINUSE|(?i:address already in use)`)
	moduleRE     = lazyre.New(`MODULE_NOT_FOUND|Cannot find (?:module|package) `)
	// Lines Node prints inside one error's report: its Require stack, the
	// properties object after the stack, the emitted-event trailer.
	nodeBlockRE = lazyre.New(`^(Require stack:|- |\s+at |\s*[a-zA-Z]+: .*,?$|\s*\}|Emitted '[a-z]+' event|\s*\{|\s*\]|\s*requireStack: )`)
	// Rust 1.73+: "thread 'main' panicked at src/main.rs:4:5:" then the
	// message; 1.89+ adds the thread id; before 1.73 the message came
	// first: "thread 'main' panicked at 'msg', src/main.rs:4:5".
	rustPanicRE    = lazyre.New(`^thread '([^']*)'(?: \(\d+\))? panicked at (?:'(.*)', )?(\S+?:\d+):\d+:?$`)
	rustTraceRE    = lazyre.New(`^(stack backtrace:|\s+\d+: |\s+at |note: )`)
	v8GCHeadRE     = lazyre.New(`^<--- Last few GCs --->$`)
	v8FatalRE      = lazyre.New(`^FATAL ERROR: .*(?:heap out of memory|Allocation failed)`)
	v8BlockRE      = lazyre.New(`^(<--- .* --->|\[\d+:0x[0-9a-f]+\]|FATAL ERROR: |----- Native stack trace -----|\s*\d+: 0x[0-9a-f]+|Security context: |\s*$)`)
	shellSignalRE  = lazyre.New(`^(?:\S+: (?:line \d+: )?\s*\d+ )?(Killed|Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point exception)(?: \(core dumped\))?(?:\s+(.*))?$`)
	timestampRE    = lazyre.New(`^\s*\[?\d{4}[/-]\d\d[/-]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s*`)
	hexRE          = lazyre.New(`0x[0-9a-fA-F]+`)
	goroutineIDRE  = lazyre.New(`\bgoroutine \d+\b`)
	hostPortRE     = lazyre.New(`\b\d{1,3}(?:\.\d{1,3}){3}:\d+\b|\[[0-9a-fA-F:]+\]:\d+`)
	rustThreadIDRE = lazyre.New(`^(thread '[^']*') \(\d+\)`)
)

// signalMeaning says what the shell's report of a signal tells a reader.
var signalMeaning = map[string]string{
	"Killed":                   "killed by SIGKILL: from outside (kill -9) or by the kernel's OOM killer when the process used too much memory",
	"Segmentation fault":       "SIGSEGV: the process read or wrote memory it does not own (a native module or runtime bug)",
	"Aborted":                  "SIGABRT: the process aborted itself (an assertion or a fatal runtime error printed above)",
	"Bus error":                "SIGBUS: a bad memory access (often a file mapped into memory that shrank)",
	"Illegal instruction":      "SIGILL: the binary was built for another CPU, or the runtime crashed",
	"Floating point exception": "SIGFPE: an integer division by zero in native code",
}

// detect finds the error signatures in numbered lines.
func detect(lines []numbered) []Signature {
	var found []Signature
	for i := 0; i < len(lines); {
		sg, end := readSignature(lines, i)
		if end <= i {
			i++
			continue
		}
		found = append(found, sg)
		i = end
	}
	return merge(found)
}

// readSignature reads the report that starts at lines[i], if one does:
// the signature and the index after its last line (i when none starts
// there).
func readSignature(lines []numbered, i int) (Signature, int) {
	l := lines[i]
	if errAt := nodeExcerptEnd(lines, i); errAt > 0 {
		// Node shows the source line that threw first: the report starts
		// there, the Error line after the caret names it.
		end := nodeBlockEnd(lines, errAt)
		sg := nodeSignature(lines, errAt, end)
		sg.Line, sg.Text, sg.Summary = l.N, l.Text, lines[errAt].Text
		return sg, end
	}
	switch {
	case goPanicRE().MatchString(l.Text):
		end := goTraceEnd(lines, i)
		trace := texts(lines[i+1 : end])
		return Signature{Kind: SigGoPanic, Line: l.N, Text: l.Text, Trace: trace, At: goOwnFrame(trace)}, end
	case goHTTPPanicRE().MatchString(l.Text):
		m := goHTTPPanicRE().FindStringSubmatch(l.Text)
		end := goTraceEnd(lines, i)
		trace := texts(lines[i+1 : end])
		return Signature{Kind: SigGoPanic, Line: l.N, Text: l.Text, Trace: trace, At: goOwnFrame(trace),
			Summary: "a net/http handler panicked serving " + m[1] + " (the server recovered and closed that connection): " + m[2]}, end
	case tracebackRE().MatchString(l.Text):
		return pythonSignature(lines, i)
	case rustPanicRE().MatchString(l.Text):
		return rustSignature(lines, i)
	case v8GCHeadRE().MatchString(l.Text) || v8FatalRE().MatchString(l.Text):
		return v8Signature(lines, i)
	case shellSignalRE().MatchString(l.Text):
		m := shellSignalRE().FindStringSubmatch(l.Text)
		sg := Signature{Kind: SigKilledBySignal, Line: l.N, Text: l.Text, Summary: signalMeaning[m[1]]}
		if cmd := strings.TrimSpace(m[2]); cmd != "" {
			sg.Summary = cmd + ": " + sg.Summary
		}
		return sg, i + 1
	case nodeErrorRE().MatchString(l.Text) && (nextIsStack(lines[i+1:]) || rejectionRE().MatchString(l.Text)):
		end := nodeBlockEnd(lines, i)
		return nodeSignature(lines, i, end), end
	case rejectionRE().MatchString(l.Text):
		return Signature{Kind: SigUnhandled, Line: l.N, Text: l.Text}, i + 1
	case addrInUseRE().MatchString(l.Text):
		return Signature{Kind: SigAddrInUse, Line: l.N, Text: l.Text}, i + 1
	}
	return Signature{}, i
}

// merge keeps the first of each repeated error, counting the repeats and
// noting where the last was printed; the signatures are bounded and so are
// their traces.
func merge(found []Signature) []Signature {
	out := []Signature{}
	index := map[string]int{}
	for _, sg := range found {
		key := identity(sg)
		if k, ok := index[key]; ok {
			out[k].Count++
			out[k].LastLine = sg.Line
			continue
		}
		if len(out) == maxSignatures {
			continue
		}
		sg.Count = 1
		if len(sg.Trace) > maxTrace {
			sg.Trace = sg.Trace[:maxTrace]
		}
		index[key] = len(out)
		out = append(out, sg)
	}
	return out
}

// identity is what makes two reports the same error: the kind, what it
// says and its trace, without what changes from one occurrence to the next
// (log timestamps, addresses, goroutine and thread ids, client ports).
func identity(sg Signature) string {
	norm := func(s string) string {
		s = timestampRE().ReplaceAllString(s, "")
		s = rustThreadIDRE().ReplaceAllString(s, "$1")
		s = hexRE().ReplaceAllString(s, "0x")
		s = goroutineIDRE().ReplaceAllString(s, "goroutine")
		return hostPortRE().ReplaceAllString(s, "host:port")
	}
	parts := []string{sg.Kind, norm(sg.Text), norm(sg.Summary), sg.Cause}
	// V8's GC lines carry timings and a shell's report a pid: what they
	// say is in the summary.
	if sg.Kind != SigOutOfMemory && sg.Kind != SigKilledBySignal {
		for _, t := range sg.Trace {
			parts = append(parts, norm(t))
		}
	} else {
		parts[1] = ""
	}
	return strings.Join(parts, "\x00")
}

// nodeSignature is the Node error report lines[i:end], named by what it
// says.
func nodeSignature(lines []numbered, i, end int) Signature {
	block := texts(lines[i:end])
	all := strings.Join(block, "\n")
	kind := SigNodeError
	switch {
	case moduleRE().MatchString(all):
		kind = SigModuleNotFound
	case addrInUseRE().MatchString(all):
		kind = SigAddrInUse
	case rejectionRE().MatchString(all):
		kind = SigUnhandled
	}
	sg := Signature{Kind: kind, Line: lines[i].N, Text: lines[i].Text, Trace: block[1:]}
	for _, fr := range vitest.Frames(all) {
		if !fr.Internal() {
			sg.At = fr.File + ":" + strconv.Itoa(fr.Line)
			break
		}
	}
	return sg
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
// between goroutines, the runtime's markers and the "exit status" line.
func goTraceEnd(lines []numbered, i int) int {
	j := i + 1
	for j < len(lines) {
		t := lines[j].Text
		switch {
		case t == "":
			// A blank line belongs to the trace only when the trace goes
			// on after it.
			if j+1 >= len(lines) || !goTraceLine(lines[j+1].Text, lines[j].Text) {
				return j
			}
			j++
		case goTraceLine(t, lines[j-1].Text):
			j++
		default:
			return j
		}
	}
	return j
}

// goTraceLine reports whether t is a line of a Go traceback (prev is the
// line before it).
func goTraceLine(t, prev string) bool {
	switch {
	case strings.HasPrefix(t, "goroutine "), strings.HasPrefix(t, "\t"), strings.HasPrefix(t, "[signal "),
		strings.HasPrefix(t, "exit status "), strings.HasPrefix(t, "created by "), t == "runtime stack:",
		strings.HasPrefix(t, "...additional frames elided..."), goFuncLineRE().MatchString(t):
		return true
	case strings.HasPrefix(t, "panic: ") && strings.HasSuffix(prev, "[recovered]"):
		return true
	}
	return false
}

// goOwnFrame is the file:line of the first frame of the program's own code
// in a Go trace: a function whose package path is main or starts with a
// domain (example.com/…), not the runtime's or the standard library's.
func goOwnFrame(trace []string) string {
	for k := 0; k+1 < len(trace); k++ {
		fn := trace[k]
		if !goFuncLineRE().MatchString(fn) || strings.HasPrefix(fn, "panic(") {
			continue
		}
		m := goFrameRE().FindStringSubmatch(trace[k+1])
		if m == nil {
			continue
		}
		first, _, _ := strings.Cut(fn, "/")
		if strings.HasPrefix(fn, "main.") || strings.Contains(first, ".") && strings.Contains(fn, "/") {
			return m[1]
		}
	}
	return ""
}

// pythonSignature reads a traceback and the tracebacks chained to it
// ("During handling of the above exception…", "The above exception was
// the direct cause…"): one crash, named by its last exception, with the
// first one as its cause.
func pythonSignature(lines []numbered, i int) (Signature, int) {
	sg := Signature{Kind: SigPython, Line: lines[i].N, Text: lines[i].Text}
	var summaries []string
	at := ""
	j := i
	for {
		end, summary := tracebackEnd(lines, j)
		for _, l := range lines[j+1 : end] {
			if m := pyFileRE().FindStringSubmatch(l.Text); m != nil {
				at = m[1] + ":" + m[2]
			}
		}
		summaries = append(summaries, summary)
		k := end
		for k < len(lines) && strings.TrimSpace(lines[k].Text) == "" {
			k++
		}
		if k >= len(lines) || !pyChainRE().MatchString(lines[k].Text) {
			sg.Trace = texts(lines[i+1 : end])
			j = end
			break
		}
		k++
		for k < len(lines) && strings.TrimSpace(lines[k].Text) == "" {
			k++
		}
		if k >= len(lines) || !tracebackRE().MatchString(lines[k].Text) {
			sg.Trace = texts(lines[i+1 : k])
			j = k
			break
		}
		j = k
	}
	sg.Summary = summaries[len(summaries)-1]
	if len(summaries) > 1 {
		sg.Cause = summaries[0]
	}
	sg.At = at
	return sg, j
}

// tracebackEnd is the index after a Python traceback and its summary: the
// first unindented line after the header names the exception.
func tracebackEnd(lines []numbered, i int) (int, string) {
	for j := i + 1; j < len(lines) && j-i <= maxTracebackLength; j++ {
		t := lines[j].Text
		if t != "" && t[0] != ' ' && t[0] != '\t' {
			return j + 1, t
		}
	}
	return min(len(lines), i+1), ""
}

// rustSignature reads a Rust panic: the "panicked at" line, the message
// below it (Rust 1.73+), the note and the backtrace.
func rustSignature(lines []numbered, i int) (Signature, int) {
	m := rustPanicRE().FindStringSubmatch(lines[i].Text)
	sg := Signature{Kind: SigRustPanic, Line: lines[i].N, Text: lines[i].Text, Summary: m[2], At: m[3]}
	j := i + 1
	if sg.Summary == "" && j < len(lines) && !rustTraceRE().MatchString(lines[j].Text) {
		sg.Summary = lines[j].Text
		j++
	}
	for j < len(lines) && rustTraceRE().MatchString(lines[j].Text) {
		j++
	}
	sg.Trace = texts(lines[i+1 : j])
	return sg, j
}

// v8Signature reads V8's out-of-memory report: the last GCs, the JS stack
// header, the FATAL ERROR line and the native stack.
func v8Signature(lines []numbered, i int) (Signature, int) {
	sg := Signature{Kind: SigOutOfMemory, Line: lines[i].N, Text: lines[i].Text}
	j := i + 1
	for j < len(lines) && v8BlockRE().MatchString(lines[j].Text) {
		j++
	}
	for _, l := range lines[i:j] {
		if v8FatalRE().MatchString(l.Text) {
			sg.Summary = l.Text
		}
	}
	if sg.Summary == "" {
		// GC lines without the fatal error: not (yet) a crash.
		return Signature{}, i
	}
	if sg.Summary == sg.Text {
		sg.Summary = ""
	}
	for j > i+1 && strings.TrimSpace(lines[j-1].Text) == "" {
		j--
	}
	sg.Trace = texts(lines[i+1 : j])
	return sg, j
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
