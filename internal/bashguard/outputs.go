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
	switch name {
	case "echo":
		return text(c.echo(args), "a pipe from echo"), true
	case "printf":
		return text(c.printf(args), "a pipe from printf"), true
	case "cat", "tac":
		files := operands(args)
		if len(files) == 0 {
			return c.in.readAll(), true
		}
		var out stream
		for _, f := range files {
			if f == "-" {
				out = c.cat(out, c.in.readAll())
				continue
			}
			out = c.cat(out, c.open(f))
		}
		return out, true
	case "tee", "head", "tail", "sort", "uniq", "dd", "pv", "fold", "nl", "cut":
		// Filters whose output is (a part of) their input: what reached
		// them still counts.
		if len(operands(args)) > 0 && name != "tee" && name != "dd" && name != "cut" {
			return stream{{kind: segFile, via: "the output of " + name}}, true
		}
		return c.in.readAll(), true
	case "grep", "egrep", "fgrep", "rg":
		if ops := operands(args); len(ops) > 1 {
			return stream{{kind: segFile, via: "the output of " + name}}, true
		}
		return c.in.readAll(), true
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
		lines := strings.Split(in.value(), "\n")
		for i, l := range lines {
			r := []rune(l)
			slices.Reverse(r)
			lines[i] = string(r)
		}
		return text(strings.Join(lines, "\n"), "a pipe from rev"), true
	case "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "md5sum", "b2sum", "cksum", "sum", "shasum", "wc":
		// A digest or a count: nothing of the input's text is left.
		c.in.readAll()
		return stream{{kind: segProgram, via: "the output of " + name}}, true
	case "which", "whereis":
		var b strings.Builder
		for _, a := range operands(args) {
			b.WriteString(binPath(a) + "\n")
		}
		return text(b.String(), "the output of "+name), true
	case "type":
		var b strings.Builder
		for _, a := range operands(args) {
			b.WriteString(binPath(a) + "\n")
		}
		return text(b.String(), "the output of type"), true
	case "readlink", "realpath":
		ops := operands(args)
		if len(ops) == 0 {
			return nil, true
		}
		p := ops[len(ops)-1]
		if isProcExe(p) {
			p = "/usr/bin/bash"
		}
		return text(p+"\n", "the output of "+name), true
	case "basename", "dirname":
		ops := operands(args)
		if len(ops) == 0 {
			return nil, true
		}
		p := ops[0]
		if name == "dirname" {
			p = path.Dir(p)
		} else {
			p = path.Base(p)
			if len(ops) > 1 {
				p = strings.TrimSuffix(p, ops[1])
			}
		}
		return text(p+"\n", "the output of "+name), true
	case "true", "false", ":", "cd", "test", "[", "exit", "return", "unset", "wait", "sleep", "mkdir", "rm", "touch", "cp", "mv", "chmod":
		return nil, true
	}
	return nil, false
}

// binPath is where which finds a program.
func binPath(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return "/usr/bin/" + name
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
		if g.kind != segText || g.json || hasMarks(g.text) {
			return false
		}
	}
	return true
}

// echo returns what echo prints: bash's echo decodes backslash escapes
// with -e (or under xpg_echo), sh's (dash) always.
func (c *checker) echo(args []string) string {
	newline, escapes := true, c.sc.posix
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
		for _, ch := range args[0][1:] {
			switch ch {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = c.sc.posix
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
	return t
}

// echoEscapes decodes echo -e's escapes: printf's, with \0nnn for octal
// and \c ending the output.
func echoEscapes(t string, newline bool) (string, bool) {
	if i := strings.Index(t, `\c`); i >= 0 {
		t, newline = t[:i], false
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] == '\\' && i+1 < len(t) && t[i+1] == '0' {
			b.WriteByte('\\')
			i++ // \0nnn is \nnn
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
	argJSON := false
	for i := 1; i < len(fields); i++ {
		a := fields[i]
		switch {
		case a == "--arg" || a == "--argjson" || a == "--slurpfile" || a == "--rawfile":
			if i+2 < len(fields) && a == "--argjson" && isJSONValue(fields[i+2]) {
				argJSON = true
			}
			i += 2
		case a == "-f" || a == "--from-file":
			i++
			haveFilter = true
			filter = "\x00file"
		case a == "--indent" || a == "-L":
			i++
		case a == "--args" || a == "--jsonargs":
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
			out := slices.Clone(in)
			for i := range out {
				out[i].via = "a pipe from jq"
			}
			return out
		}
		if vals, ok := jqPath(f, in.value(), raw); ok {
			return stream{{text: vals, via: "a pipe from jq", producer: fields}}
		}
		if builds {
			return jsonOut
		}
	}
	if in.mayHoldJSON() && !known(in) {
		return stream{{kind: segDerived, via: "the output of jq"}}
	}
	return stream{{kind: segProgram, via: "the output of jq"}}
}

// jqPath evaluates a filter made of simple paths (.a, .a.b, .["k"], .[0],
// .[], joined by |) over the JSON values of input, printing each result
// as jq would (-r: strings raw).
func jqPath(filter, input string, raw bool) (string, bool) {
	var steps []jqStep
	for _, part := range strings.Split(filter, "|") {
		s, ok := parseJQPath(strings.TrimSpace(part))
		if !ok {
			return "", false
		}
		steps = append(steps, s...)
	}
	dec := json.NewDecoder(strings.NewReader(input))
	dec.UseNumber()
	var b strings.Builder
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return "", false
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
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if enc.Encode(x) != nil {
				return "", false
			}
			b.Write(buf.Bytes())
		}
		if b.Len() > MaxValueLen {
			return "", false
		}
	}
	return b.String(), true
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
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(clean); err == nil {
				return stream{{text: string(b), via: "a pipe from base64 -d", producer: fields}}
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
	return stream{{text: hex.EncodeToString([]byte(t)) + "\n", via: "a pipe from xxd"}}
}
