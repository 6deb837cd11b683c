package bashguard

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// output models what a program the guard knows prints; ok is false for a
// program it has no model of.
func (c *checker) output(name string, fields []string) (stream, bool) {
	args := fields[1:]
	text := func(t, via string) stream {
		if !c.b.text(len(t)) {
			return nil
		}
		return stream{{text: t, via: via, producer: fields}}
	}
	maybeText := func(t, via string, exact bool) stream {
		s := text(t, via)
		if !exact {
			return inexact(s)
		}
		return s
	}
	switch name {
	case "printenv":
		return c.environment("printenv"), true
	case "echo":
		t, exact := c.echo(args)
		return maybeText(t, "a pipe from echo", exact), true
	case "printf":
		t, exact := c.printf(args)
		return maybeText(t, "a pipe from printf", exact), true
	case "cat", "tac":
		files := operands(args)
		var out stream
		if len(files) == 0 {
			out = c.in.readAll()
		}
		for _, f := range files {
			if f == "-" {
				out = c.cat(out, c.in.readAll())
				continue
			}
			out = c.cat(out, c.open(f))
		}
		if name == "tac" || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") && a != "-" && a != "-u" && a != "--" }) {
			// Lines reversed, numbered, ends shown …: the text is only
			// what it may print.
			return lines(out), true
		}
		return out, true
	case "pv":
		if len(operands(args)) > 0 {
			return stream{{kind: segFile, via: "the output of " + name}}, true
		}
		return c.in.readAll(), true
	case "head", "tail", "sort", "uniq", "grep", "egrep", "fgrep", "rg":
		// Filters whose output is some of the lines of their input: what
		// reached them may still reach a client, but which lines do is
		// not known. Options that change the lines (counts, -c bytes,
		// -o) make the output a program's.
		ops := operandsOf(name, args)
		isGrep := strings.Contains(name, "grep") || name == "rg"
		if isGrep && len(ops) > 1 || !isGrep && len(ops) > 0 {
			return stream{{kind: segFile, via: "the output of " + name}}, true
		}
		for _, a := range args {
			if strings.HasPrefix(a, "-") && lineChanging(name, a) {
				return c.programOutput(name, fields), true
			}
		}
		if name == "head" || name == "tail" {
			if out, ok := c.headTail(name, args); ok {
				return out, true
			}
		}
		return lines(c.in.readAll()), true
	case "dd", "fold", "nl", "cut":
		if name == "dd" && len(args) == 0 {
			return c.in.readAll(), true
		}
		if len(operandsOf(name, args)) > 0 && name != "dd" {
			return stream{{kind: segFile, via: "the output of " + name}}, true
		}
		// Parts of lines: the output is made from the input, not a copy.
		out := c.programOutput(name, fields)
		c.in.readAll()
		return out, true
	case "jq", "gojq", "jaq":
		return c.jq(fields), true
	case "base64", "basenc":
		return c.base64(fields), true
	case "xxd":
		return c.xxd(fields), true
	case "rev":
		in := c.in.readAll()
		if !known(in) {
			return c.programOutput(name, fields), true
		}
		v := in.value()
		lines := strings.Split(v, "\n")
		for i, l := range lines {
			r := []rune(l)
			slices.Reverse(r)
			lines[i] = string(r)
		}
		// rev reverses characters of the locale: bytes and runes agree
		// only on ASCII.
		return maybeText(strings.Join(lines, "\n"), "a pipe from rev", isASCII(v)), true
	case "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "md5sum", "b2sum", "cksum", "sum", "shasum", "wc":
		// A digest or a count: nothing of the input's text is left.
		c.in.readAll()
		return stream{{kind: segProgram, via: "the output of " + name}}, true
	case "which", "whereis":
		if name == "whereis" || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }) {
			return stream{{kind: segProgram, via: "the output of " + name}}, true
		}
		return c.whichOutput(name, operands(args), false), true
	case "type":
		if slices.Contains(args, "-P") || slices.Contains(args, "-p") || slices.Contains(args, "-fp") {
			return c.whichOutput(name, operands(args), true), true
		}
		return stream{{kind: segProgram, via: "the output of type"}}, true
	case "readlink", "realpath":
		ops := operands(args)
		if len(ops) == 0 {
			return nil, true
		}
		p := ops[len(ops)-1]
		if isProcExe(p) {
			if c.progs != nil {
				if f := c.progs.Find("bash", c.progs.Path(), "", true).File; f != "" {
					return text(f+"\n", "the output of "+name), true
				}
				return stream{{kind: segProgram, via: "the output of " + name}}, true
			}
			p = "/usr/bin/bash"
		} else if c.progs != nil || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }) {
			// Where links lead is on disk; options (-m, --relative-to)
			// change what is printed.
			return stream{{kind: segProgram, via: "the output of " + name}}, true
		}
		return text(p+"\n", "the output of "+name), true
	case "basename", "dirname":
		ops := operands(args)
		if len(ops) == 0 || len(ops) != len(args) || len(ops) > 2 || name == "dirname" && len(ops) > 1 || ops[0] == "" {
			return stream{{kind: segProgram, via: "the output of " + name}}, true
		}
		p := ops[0]
		if name == "dirname" {
			p = path.Dir(strings.TrimRight(p, "/"))
			if strings.Trim(ops[0], "/") == "" {
				p = "/"
			}
		} else {
			p = path.Base(p)
			if len(ops) > 1 && p != ops[1] {
				p = strings.TrimSuffix(p, ops[1])
			}
		}
		return text(p+"\n", "the output of "+name), true
	case "true", "false", ":", "cd", "test", "[", "exit", "return", "unset", "wait", "sleep", "mkdir", "rm", "touch", "cp", "mv", "chmod":
		return nil, true
	}
	return nil, false
}

// lineChanging reports whether an option makes a line filter print other
// than whole lines of its input.
func lineChanging(name, a string) bool {
	if strings.HasPrefix(a, "--") {
		switch a {
		case "--invert-match", "--ignore-case", "--extended-regexp", "--fixed-strings", "--word-regexp", "--line-regexp", "--reverse", "--numeric-sort", "--unique":
			return false
		}
		return !strings.HasPrefix(a, "--regexp") && !strings.HasPrefix(a, "--lines")
	}
	switch name {
	case "head", "tail":
		return strings.ContainsAny(a[1:], "cqvzf")
	case "uniq":
		return strings.ContainsAny(a[1:], "cswz")
	case "sort":
		return strings.ContainsAny(a[1:], "ozm")
	}
	return strings.ContainsAny(a[1:], "ocnbHhZzlLqsAB") // grep: -o, -c, -n, -b, -H …
}

// headTail is what head and tail print without options or with -n N.
func (c *checker) headTail(name string, args []string) (stream, bool) {
	n := 10
	switch {
	case len(args) == 0:
	case len(args) == 2 && args[0] == "-n" && isNumber(args[1]):
		n, _ = strconv.Atoi(args[1])
	case len(args) == 1 && strings.HasPrefix(args[0], "-n") && isNumber(args[0][2:]):
		n, _ = strconv.Atoi(args[0][2:])
	case len(args) == 1 && len(args[0]) > 1 && isNumber(args[0][1:]):
		n, _ = strconv.Atoi(args[0][1:])
	default:
		return nil, false
	}
	in := c.in.readAll()
	if !known(in) || n < 0 {
		return lines(in), true
	}
	v := in.value()
	ls := strings.SplitAfter(v, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	if name == "head" {
		ls = ls[:min(n, len(ls))]
	} else {
		ls = ls[max(0, len(ls)-n):]
	}
	via := "a pipe from " + name
	if len(in) > 0 {
		via = in[0].via
	}
	return stream{{text: strings.Join(ls, ""), via: via}}, true
}

// lines marks s as some of its lines, in some order: searched for JSON
// line by line, its value not known.
func lines(s stream) stream { return inexact(s) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// whichOutput is what which (or type -P) prints: the file each name is
// found as on PATH.
func (c *checker) whichOutput(name string, names []string, typeP bool) stream {
	var b strings.Builder
	for _, a := range names {
		switch {
		case hasMarks(a):
			return stream{{kind: segProgram, via: "the output of " + name}}
		case c.progs == nil:
			b.WriteString(binPath(a) + "\n")
		default:
			p := c.progs.Find(a, shown(c.value("PATH")), shown(c.sc.cwd), !c.sc.cwdLost)
			if p.File == "" && p.Unsure != "" {
				return stream{{kind: segProgram, via: "the output of " + name}}
			}
			if p.File != "" {
				b.WriteString(p.File + "\n")
			}
		}
	}
	return stream{{text: b.String(), via: "the output of " + name, producer: append([]string{name}, names...)}}
}

// binPath is where which finds a program.
func binPath(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return "/usr/bin/" + name
}

// valueOptions are the short options of filters that take the next
// argument as their value.
var valueOptions = map[string]string{"head": "cn", "tail": "cn", "sort": "ktoST", "uniq": "fsw", "grep": "efmABCd", "egrep": "efmABCd",
	"fgrep": "efmABCd", "rg": "efmABCgtTM", "cut": "bcdf", "fold": "w", "nl": "bdfhilnpsvw"}

// operandsOf are a filter's operands: its arguments that are neither
// options nor the value of one.
func operandsOf(name string, args []string) []string {
	takes := valueOptions[name]
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i+1:]...)
		case strings.HasPrefix(a, "--") || a == "-" || !strings.HasPrefix(a, "-"):
			if !strings.HasPrefix(a, "--") {
				out = append(out, a)
			}
		case len(a) == 2 && strings.ContainsRune(takes, rune(a[1])):
			i++
		}
	}
	return out
}

// operands are the arguments that do not start with "-" (after "--", all).
func operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
		}
	}
	return out
}

// known reports whether every segment is text the guard knows.
func known(s stream) bool {
	for _, g := range s {
		if g.kind != segText || g.json || g.inexact || hasMarks(g.text) {
			return false
		}
	}
	return true
}

// echo returns what echo prints: bash's echo decodes backslash escapes
// with -e (or under xpg_echo), sh's (dash) always.
func (c *checker) echo(args []string) (string, bool) {
	esc := c.sc.echoEsc
	exact := esc != unsure
	newline, escapes := true, esc == on
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
		if esc == on && strings.ContainsAny(args[0], "eE") {
			exact = false // sh's echo prints -e itself
		}
		for _, ch := range args[0][1:] {
			switch ch {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = esc == on
			}
		}
		args = args[1:]
	}
	t := strings.Join(args, " ")
	if escapes {
		t, newline = echoEscapes(t, newline)
	}
	if newline {
		t += "\n"
	}
	return t, exact
}

// echoEscapes decodes echo -e's escapes: printf's, with \0nnn for octal
// and \c ending the output.
func echoEscapes(t string, newline bool) (string, bool) {
	if i := strings.Index(t, `\c`); i >= 0 {
		t, newline = t[:i], false
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == '\\' && i+1 < len(t) && t[i+1] == '0':
			b.WriteByte('\\')
			i++ // \0nnn is \nnn
			continue
		case t[i] == '\\' && i+1 < len(t) && t[i+1] >= '1' && t[i+1] <= '7':
			// echo's octal needs the 0: \162 stays as written.
			b.WriteString(`\\`)
			continue
		case t[i] == '\\' && i+1 < len(t) && t[i+1] == '\\':
			b.WriteString(`\\`)
			i++
			continue
		}
		b.WriteByte(t[i])
	}
	d, _, err := expandFormat(b.String())
	if err != nil {
		return t, newline
	}
	return d, newline
}

// jq models jq: with -n a filter that builds an object or array prints
// JSON made from the command's text; over JSON the command wrote, the
// identity passes it on and a simple path (.a.b, .[0], .[]) is evaluated;
// other filters print data the guard does not follow.
func (c *checker) jq(fields []string) stream {
	null, raw := false, false
	filter, haveFilter := "", false
	var files []string
	argJSON, args := false, false
	for i := 1; i < len(fields); i++ {
		a := fields[i]
		switch {
		case a == "--arg" || a == "--argjson" || a == "--slurpfile" || a == "--rawfile":
			if i+2 < len(fields) && a == "--argjson" && isJSONValue(fields[i+2]) {
				argJSON = true
			}
			args = true
			i += 2
		case a == "-f" || a == "--from-file":
			i++
			haveFilter = true
			filter = "\x00file"
		case a == "--indent" || a == "-L":
			i++
		case a == "--args" || a == "--jsonargs":
			args = true
			i = len(fields)
		case a == "--null-input":
			null = true
		case a == "--raw-output" || a == "--join-output" || a == "--raw-output0":
			raw = true
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			null = null || strings.ContainsRune(a, 'n')
			raw = raw || strings.ContainsAny(a, "rj")
		case !haveFilter:
			filter, haveFilter = a, true
		default:
			files = append(files, a)
		}
	}
	f := strings.TrimSpace(filter)
	builds := strings.HasPrefix(f, "{") || strings.HasPrefix(f, "[") || isJSONValue(f)
	jsonOut := stream{{json: true, text: f, via: "a pipe from jq", producer: fields}}
	if null {
		var str string
		switch {
		case builds || argJSON:
			return jsonOut
		case raw && json.Unmarshal([]byte(f), &str) == nil:
			// jq -rn '"…"' prints the string.
			return stream{{text: str + "\n", via: "a pipe from jq", producer: fields}}
		}
		if jqBuilds(f) {
			// Without input, what jq prints is made from its filter and
			// arguments ($ARGS.named, (…|{a:1}), "…"|fromjson, env):
			// text of the command that may be JSON.
			return stream{{kind: segDerived, via: "the output of jq -n"}}
		}
		return stream{{kind: segProgram, via: "the output of jq -n"}}
	}
	var in stream
	if len(files) == 0 {
		in = c.in.readAll()
	} else {
		for _, p := range files {
			in = c.cat(in, c.open(p))
		}
	}
	if known(in) {
		if f == "" || f == "." {
			// The same JSON, laid out as jq lays it out.
			out := inexact(in)
			for i := range out {
				out[i].via = "a pipe from jq"
			}
			return out
		}
		if vals, strs, ok := jqPath(f, in.value(), raw); ok {
			s := stream{{text: vals, via: "a pipe from jq", producer: fields}}
			if !raw || !strs || !onlyOptions(fields, "-r", "--raw-output") {
				// JSON as jq prints it (indentation, number forms) is
				// not redone exactly; raw strings are.
				s = inexact(s)
			}
			return s
		}
		if builds {
			return jsonOut
		}
	}
	if in.mayHoldJSON() || args && strings.Contains(f, "$") {
		// JSON of the command's text, or its arguments ($ARGS, $x), in
		// a form the analysis does not redo.
		return stream{{kind: segDerived, via: "the output of jq"}}
	}
	return stream{{kind: segProgram, via: "the output of jq"}}
}

// jqBuilds reports whether a jq filter may build an object or array:
// brackets anywhere in it, $ARGS, a parse of a string (fromjson), the
// environment or input read by the filter itself.
func jqBuilds(filter string) bool {
	if strings.ContainsAny(filter, "{[") {
		return true
	}
	for _, w := range []string{"ARGS", "json", "env", "input", "splits", "getpath", "$__prog"} {
		if strings.Contains(filter, w) {
			return true
		}
	}
	return false
}

// jqPath evaluates a filter made of simple paths (.a, .a.b, .["k"], .[0],
// .[], joined by |) over the JSON values of input, printing each result
// as jq would (-r: strings raw).
func jqPath(filter, input string, raw bool) (string, bool, bool) {
	var steps []jqStep
	for _, part := range strings.Split(filter, "|") {
		s, ok := parseJQPath(strings.TrimSpace(part))
		if !ok {
			return "", false, false
		}
		steps = append(steps, s...)
	}
	dec := json.NewDecoder(strings.NewReader(input))
	dec.UseNumber()
	var b strings.Builder
	strs := true
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return "", false, false
		}
		vals := []any{v}
		for _, st := range steps {
			var next []any
			for _, x := range vals {
				next = append(next, st.apply(x)...)
			}
			vals = next
		}
		for _, x := range vals {
			if s, ok := x.(string); ok && raw {
				b.WriteString(s + "\n")
				continue
			}
			strs = false
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if enc.Encode(x) != nil {
				return "", false, false
			}
			b.Write(buf.Bytes())
		}
		if b.Len() > MaxValueLen {
			return "", false, false
		}
	}
	return b.String(), strs, true
}

// onlyOptions reports whether the options of fields (before the first
// operand) are among allowed.
func onlyOptions(fields []string, allowed ...string) bool {
	for _, a := range fields[1:] {
		if !strings.HasPrefix(a, "-") {
			return true
		}
		if !slices.Contains(allowed, a) {
			return false
		}
	}
	return true
}

// jqStep is one step of a path: a key, an index, or every element.
type jqStep struct {
	key   string
	index int
	kind  byte // 'k' key, 'i' index, 'e' each
}

func (s jqStep) apply(v any) []any {
	switch s.kind {
	case 'k':
		if m, ok := v.(map[string]any); ok {
			return []any{m[s.key]}
		}
		return []any{nil}
	case 'i':
		if a, ok := v.([]any); ok {
			i := s.index
			if i < 0 {
				i += len(a)
			}
			if i >= 0 && i < len(a) {
				return []any{a[i]}
			}
		}
		return []any{nil}
	}
	switch x := v.(type) {
	case []any:
		return x
	case map[string]any:
		out := make([]any, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, x[k])
		}
		return out
	}
	return nil
}

// parseJQPath parses ".", ".a.b", `.["k"]`, ".[0]", ".[]", ".a[]?".
func parseJQPath(p string) ([]jqStep, bool) {
	if p == "." {
		return nil, true
	}
	if !strings.HasPrefix(p, ".") {
		return nil, false
	}
	var steps []jqStep
	for p != "" {
		p = strings.TrimPrefix(p, "?")
		if p == "" {
			break
		}
		switch {
		case strings.HasPrefix(p, ".["), strings.HasPrefix(p, "["):
			p = strings.TrimPrefix(strings.TrimPrefix(p, "."), "[")
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, false
			}
			in := strings.TrimSpace(p[:end])
			p = p[end+1:]
			switch {
			case in == "":
				steps = append(steps, jqStep{kind: 'e'})
			case strings.HasPrefix(in, `"`):
				k, err := strconv.Unquote(in)
				if err != nil {
					return nil, false
				}
				steps = append(steps, jqStep{kind: 'k', key: k})
			default:
				n, err := strconv.Atoi(in)
				if err != nil {
					return nil, false
				}
				steps = append(steps, jqStep{kind: 'i', index: n})
			}
		case strings.HasPrefix(p, "."):
			p = p[1:]
			j := 0
			for j < len(p) && (p[j] == '_' || 'a' <= p[j] && p[j] <= 'z' || 'A' <= p[j] && p[j] <= 'Z' || j > 0 && '0' <= p[j] && p[j] <= '9') {
				j++
			}
			if j == 0 {
				return nil, false
			}
			steps = append(steps, jqStep{kind: 'k', key: p[:j]})
			p = p[j:]
		default:
			return nil, false
		}
	}
	return steps, true
}

// base64 decodes (-d) or encodes what the command gives it.
func (c *checker) base64(fields []string) stream {
	decode, wrap := false, 76
	var files []string
	for i := 1; i < len(fields); i++ {
		a := fields[i]
		switch {
		case a == "-d" || a == "--decode" || a == "-D":
			decode = true
		case a == "-w" && i+1 < len(fields):
			i++
			wrap, _ = strconv.Atoi(fields[i])
		case strings.HasPrefix(a, "--wrap="):
			wrap, _ = strconv.Atoi(strings.TrimPrefix(a, "--wrap="))
		case strings.HasPrefix(a, "-w"):
			wrap, _ = strconv.Atoi(a[2:])
		case strings.HasPrefix(a, "-") && len(a) > 1 && !strings.HasPrefix(a, "--"):
			decode = decode || strings.ContainsRune(a, 'd')
		case !strings.HasPrefix(a, "-"):
			files = append(files, a)
		}
	}
	in := c.in.readAll()
	if len(files) > 0 {
		in = nil
		for _, f := range files {
			in = c.cat(in, c.open(f))
		}
	}
	if !known(in) {
		if in.mayHoldJSON() {
			return stream{{kind: segDerived, via: "the output of base64"}}
		}
		return stream{{kind: segProgram, via: "the output of base64"}}
	}
	t := in.value()
	if decode {
		clean := strings.Join(strings.Fields(t), "")
		for i, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(clean); err == nil {
				s := stream{{text: string(b), via: "a pipe from base64 -d", producer: fields}}
				if i > 0 {
					// base64 -d reads only the standard alphabet with
					// padding: it stops (or fails) on this.
					s = inexact(s)
				}
				return s
			}
		}
		return stream{{kind: segProgram, via: "the output of base64 -d"}}
	}
	enc := base64.StdEncoding.EncodeToString([]byte(t))
	if wrap > 0 {
		var b strings.Builder
		for len(enc) > wrap {
			b.WriteString(enc[:wrap] + "\n")
			enc = enc[wrap:]
		}
		enc = b.String() + enc
	}
	return stream{{text: enc + "\n", via: "a pipe from base64"}}
}

// xxd decodes a plain hex dump (-r -p) or makes one (-p).
func (c *checker) xxd(fields []string) stream {
	rev, plain := false, false
	for _, a := range fields[1:] {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
			rev = rev || strings.ContainsRune(a, 'r')
			plain = plain || strings.ContainsRune(a, 'p') || a == "-ps" || a == "-plain"
		}
	}
	in := c.in.readAll()
	if len(operands(fields[1:])) > 0 || !known(in) || !plain {
		if in.mayHoldJSON() {
			return stream{{kind: segDerived, via: "the output of xxd"}}
		}
		return stream{{kind: segProgram, via: "the output of xxd"}}
	}
	t := in.value()
	if rev {
		b, err := hex.DecodeString(strings.Join(strings.Fields(t), ""))
		if err != nil {
			return stream{{kind: segDerived, via: "the output of xxd -r"}}
		}
		return stream{{text: string(b), via: "a pipe from xxd -r", producer: fields}}
	}
	// xxd -p wraps its lines.
	return inexact(stream{{text: hex.EncodeToString([]byte(t)) + "\n", via: "a pipe from xxd"}})
}

// environment is what env or printenv prints: the variables the command
// set (NAME=value before it included) come back out, so text of the
// command that could be JSON may be in it.
func (c *checker) environment(name string) stream {
	for _, v := range c.sc.vars {
		if mayHoldJSON(v) {
			return stream{{kind: segDerived, via: "the output of " + name}}
		}
	}
	return stream{{kind: segProgram, via: "the output of " + name}}
}
