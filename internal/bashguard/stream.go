package bashguard

import "strings"

// segKind says what the guard knows of a piece of a stream.
type segKind uint8

const (
	// segText is text the guard knows (it may hold marks for unknown
	// parts, as a here-string with $HOME in it does).
	segText segKind = iota
	// segFile is a file on disk the command did not write.
	segFile
	// segProgram is a program's output that did not come from the
	// command's text (git log, curl's response, an environment value).
	segProgram
	// segDerived is a program's output made from text of the command the
	// guard could not follow (sed, python … fed text that could hold JSON).
	segDerived
)

// seg is one piece of what flows through a pipe or a redirection.
type seg struct {
	kind segKind
	text string
	// via names the source in a message: "a here-string", "a pipe from
	// echo", "the file body.json", "the output of sed".
	via string
	// json is true when a program built JSON from the command's text
	// (jq -n '{a:1}'); text is then the program's filter.
	json bool
	// producer is the command that printed the text, for the allowed
	// form (jq -n '{a:1}' > "$TMPDIR/x.json").
	producer []string
	// inexact is set on text that may be printed rather than is (a
	// branch that may not run, a filter the analysis does not redo): the
	// guard searches it for JSON, but its value is not known.
	inexact bool
}

// stream is what a command reads or prints, in order.
type stream []seg

func (s stream) size() int {
	n := 0
	for _, g := range s {
		n += len(g.text) + 1
	}
	return n
}

// value is the stream as a word's value (a command substitution): known
// text as is, the rest as marks.
func (s stream) value() string {
	var b strings.Builder
	for _, g := range s {
		b.WriteString(g.value())
	}
	return b.String()
}

func (g seg) value() string {
	switch {
	case g.json:
		return string(markJSON) + g.text
	case g.kind == segText && g.inexact:
		return joinValue(g.text, string(markExternal))
	case g.kind == segText:
		return g.text
	case g.kind == segDerived:
		return string(markDerived)
	}
	return string(markExternal)
}

// mayHoldJSON reports whether a program fed the stream could print JSON
// that came from the command's text.
func (s stream) mayHoldJSON() bool {
	for _, g := range s {
		if g.json || g.kind == segDerived || g.kind == segText && mayHoldJSON(g.text) {
			return true
		}
	}
	return false
}

// text is what the stream holds as a file's content, and whether that is
// all of it exactly.
func (s stream) text() (string, bool) {
	var b strings.Builder
	exact := true
	for _, g := range s {
		if g.kind == segText && !g.json {
			b.WriteString(g.text)
			exact = exact && !g.inexact
			continue
		}
		b.WriteString(g.value())
		exact = false
	}
	return b.String(), exact
}

// reader is a statement's standard input: read consumes a line, cat the
// rest. Programs the guard does not know only peek, so that what they may
// leave unread still counts for the commands after them.
type reader struct {
	segs stream
	seg  int // current segment
	off  int // byte offset in a text segment
	used int // bytes (or segments) consumed, for loops
}

// rest returns what is left without consuming it.
func (r *reader) rest() stream {
	if r == nil || r.seg >= len(r.segs) {
		return nil
	}
	out := append(stream(nil), r.segs[r.seg:]...)
	if r.off > 0 {
		out[0].text = out[0].text[r.off:]
	}
	return out
}

// readAll consumes and returns what is left.
func (r *reader) readAll() stream {
	out := r.rest()
	if r != nil {
		r.used += out.size()
		r.seg, r.off = len(r.segs), 0
	}
	return out
}

// readLine consumes text up to delim (a newline for read) and returns it
// without the delimiter; an unknown segment reads as its mark. ok is false
// at the end of the input.
func (r *reader) readLine(delim byte) (line string, ok bool) {
	if r == nil {
		return "", false
	}
	for r.seg < len(r.segs) {
		g := r.segs[r.seg]
		if g.kind != segText || g.json || g.inexact {
			r.seg, r.off = r.seg+1, 0
			r.used++
			return g.value(), true
		}
		if r.off >= len(g.text) {
			r.seg, r.off = r.seg+1, 0
			continue
		}
		t := g.text[r.off:]
		if i := strings.IndexByte(t, delim); i >= 0 {
			r.off += i + 1
			r.used += i + 1
			return t[:i], true
		}
		r.seg, r.off = r.seg+1, 0
		r.used += len(t)
		return t, true
	}
	return "", false
}

// readerPos is where a reader stands.
type readerPos struct{ seg, off, used int }

func (r *reader) pos() readerPos {
	if r == nil {
		return readerPos{}
	}
	return readerPos{r.seg, r.off, r.used}
}

func (r *reader) seek(p readerPos) {
	if r != nil {
		r.seg, r.off, r.used = p.seg, p.off, p.used
	}
}

func (r *reader) consumed() int {
	if r == nil {
		return 0
	}
	return r.used
}

func (r *reader) empty() bool {
	if r == nil {
		return true
	}
	for i := r.seg; i < len(r.segs); i++ {
		g := r.segs[i]
		if g.kind != segText || g.json || g.inexact || i == r.seg && r.off < len(g.text) || i > r.seg && g.text != "" {
			return false
		}
	}
	return true
}

// inheritedStdin names the standard input the command is given, which the
// analysis does not know.
const inheritedStdin = "the standard input the command is given"

// describe says where the input comes from, for the facts ("" when it
// is the one the command is given).
func (r *reader) describe() string {
	if r.empty() || r.segs[r.seg].via == inheritedStdin {
		return ""
	}
	return r.segs[r.seg].via
}
