package bashguard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
)

// program is the command name a field runs: its base name, so that
// /usr/bin/curl is curl.
func program(f string) string {
	if i := strings.LastIndexByte(f, '/'); i >= 0 {
		return f[i+1:]
	}
	return f
}

// wrapper describes a command that runs another command given in its
// arguments.
type wrapper struct {
	// withArg are options that take a value as the next field.
	withArg []string
	// positional is how many non-option fields come before the command
	// (timeout's DURATION).
	positional int
	// assigns is true when NAME=VALUE fields may precede the command.
	assigns bool
	// noRun are options with which the wrapper does not run the command
	// (command -v).
	noRun []string
	// script are options whose value is itself a command line (env -S).
	script []string
}

var wrappers = map[string]wrapper{
	"timeout":  {withArg: []string{"-s", "--signal", "-k", "--kill-after"}, positional: 1},
	"env":      {withArg: []string{"-u", "--unset", "-C", "--chdir"}, assigns: true, script: []string{"-S", "--split-string"}},
	"nice":     {withArg: []string{"-n", "--adjustment"}},
	"nohup":    {},
	"command":  {noRun: []string{"-v", "-V"}},
	"builtin":  {},
	"exec":     {withArg: []string{"-a"}},
	"time":     {withArg: []string{"-f", "--format", "-o", "--output"}},
	"sudo":     {withArg: []string{"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-U", "--other-user", "-T", "--command-timeout"}, assigns: true, noRun: []string{"-l", "--list", "-v", "--validate", "-k", "-K", "-e", "--edit"}},
	"doas":     {withArg: []string{"-u", "-C"}},
	"xargs":    {withArg: []string{"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "--max-lines", "-n", "--max-args", "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"}},
	"stdbuf":   {withArg: []string{"-i", "--input", "-o", "--output", "-e", "--error"}},
	"setsid":   {},
	"ionice":   {withArg: []string{"-c", "--class", "-n", "--classdata"}},
	"chronic":  {},
	"unbuffer": {},
	"busybox":  {},
	"nsenter":  {withArg: []string{"-t", "--target"}},
	"chrt":     {positional: 1},
	"taskset":  {positional: 1},
}

// inner returns the index of the wrapped command in fields (fields[0] is the
// wrapper), -1 when there is none, and any script given as an option value.
func (w wrapper) inner(fields []string) (int, []string) {
	var scripts []string
	pos := w.positional
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "--":
			if i+1 < len(fields) && pos == 0 {
				return i + 1, scripts
			}
			continue
		case strings.HasPrefix(f, "-") && len(f) > 1:
			name, val, hasVal := strings.Cut(f, "=")
			if slices.Contains(w.noRun, name) {
				return -1, scripts
			}
			if slices.Contains(w.script, name) {
				if hasVal {
					scripts = append(scripts, val)
				} else if i+1 < len(fields) {
					scripts = append(scripts, fields[i+1])
					i++
				}
				continue
			}
			if slices.Contains(w.withArg, name) && !hasVal {
				i++
			}
			continue
		case w.assigns && isAssign(f):
			continue
		case pos > 0:
			pos--
			continue
		}
		return i, scripts
	}
	return -1, scripts
}

func isAssign(f string) bool {
	name, _, ok := strings.Cut(f, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

var shells = map[string]bool{"bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true}

// command checks one resolved command line. input is what reaches its
// standard input (heredocs, here-strings, earlier pipeline stages).
func (c *checker) command(fields []string, input []piece, depth int) error {
	return c.commandAt(fields, 0, input, depth)
}

// commandAt checks the command that starts at fields[off]; the fields
// before it are kept for the allowed form.
func (c *checker) commandAt(fields []string, off int, input []piece, depth int) error {
	for off < len(fields) {
		w, ok := wrappers[program(fields[off])]
		if !ok {
			break
		}
		next, scripts := w.inner(fields[off:])
		for _, s := range scripts {
			if err := c.script(s, depth+1); err != nil {
				return err
			}
		}
		if next < 0 {
			return nil
		}
		off += next
	}
	if off >= len(fields) {
		return nil
	}
	name := program(fields[off])
	args := fields[off:]
	switch {
	case shells[name]:
		return c.shell(args, input, depth)
	case name == "eval":
		return c.script(strings.Join(args[1:], " "), depth+1)
	case name == "source" || name == ".":
		// The sourced file is a process substitution or stdin (here-string,
		// heredoc, pipe): what reaches it is the script.
		for _, p := range input {
			if err := c.script(p.text, depth+1); err != nil {
				return err
			}
		}
		return nil
	case name == "alias":
		// With expand_aliases the value runs as a command line.
		for _, a := range args[1:] {
			if _, v, ok := strings.Cut(a, "="); ok {
				if err := c.script(v, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	case name == "read" || name == "mapfile" || name == "readarray":
		c.readInto(args, input)
		return nil
	case name == "printf" && len(args) > 3 && args[1] == "-v":
		text, _, err := expand.Format(c.cfg(), args[3], args[4:])
		if err != nil {
			text = strings.Join(args[3:], " ")
		}
		c.setVar(args[2], []string{text})
		return nil
	case c.funcs[name] != nil:
		return c.call(name, args, input, depth)
	case name == "set":
		if i := slices.Index(args, "--"); i > 0 {
			c.setPositional(args[i+1:])
		}
		return nil
	}
	client := httpClient(name, args)
	if client == nil {
		return c.runner(fields, off, input, depth)
	}
	f := &finding{fields: fields, off: off, edits: map[int]string{}}
	if client(f, args) {
		return f.err(name)
	}
	if generic(f, args) {
		return f.err(name)
	}
	if (name == "curl" || name == "curlie") && curlReadsConfig(args) {
		for _, p := range input {
			if payload, ok := curlConfigJSON(p.text); ok {
				f.set(payload, "a curl config (-K)")
				// Suggest the body option in place of the config file.
				for i := off + 1; i < len(fields); i++ {
					switch a := fields[i]; {
					case (a == "-K" || a == "--config") && i+1 < len(fields):
						f.edits[i], f.edits[i+1] = "-d", "@"+FileHint
					case strings.HasPrefix(a, "--config="):
						f.edits[i] = "--data=@" + FileHint
					case strings.HasPrefix(a, "-K"):
						f.edits[i] = "-d@" + FileHint
					default:
						continue
					}
					break
				}
				return f.err(name)
			}
		}
	}
	for _, p := range input {
		if payload, ok := jsonIn(p.text); ok {
			f.set(payload, p.via)
			f.stdin = true
			for i := off + 1; i < len(fields); i++ {
				switch {
				case fields[i] == "@-" || fields[i] == "@/dev/stdin":
					f.edits[i] = "@" + FileHint
					f.stdin = false
				case fields[i] == "-" && fields[i-1] == "--input":
					f.edits[i] = FileHint
					f.stdin = false
				case p.via == procVia && strings.Contains(fields[i], procPath):
					f.edits[i] = strings.Replace(fields[i], procPath, FileHint, 1)
					f.stdin = false
				}
			}
			return f.err(name)
		}
	}
	return nil
}

// runners run a command line given as one of their arguments (watch 'cmd',
// flock f -c 'cmd', ssh host 'cmd' …).
var runners = map[string]bool{"watch": true, "flock": true, "su": true, "runuser": true, "script": true, "ssh": true, "parallel": true, "tmux": true, "screen": true, "entr": true}

// runner handles a program the guard does not know: when a later field
// names an HTTP client, a shell with -c, or eval, that is where the command
// it runs starts (find -exec curl …, strace curl …, watch curl …); the
// arguments of a known runner that hold a whole command line are checked as
// scripts. echo and printf only print their arguments.
func (c *checker) runner(fields []string, off int, input []piece, depth int) error {
	name := program(fields[off])
	if name == "echo" || name == "printf" {
		return nil
	}
	for i := off + 1; i < len(fields); i++ {
		n := program(fields[i])
		if httpClient(n, fields[i:]) != nil || n == "eval" || shells[n] && shellHasC(fields[i:]) {
			return c.commandAt(fields, i, input, depth)
		}
	}
	if runners[name] {
		for _, f := range fields[off+1:] {
			if strings.ContainsAny(f, space) {
				if err := c.script(f, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// shellHasC reports whether a shell invocation runs a -c string.
func shellHasC(args []string) bool {
	for _, a := range args[1:] {
		if a == "--" || !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			break
		}
		if strings.ContainsRune(a[1:], 'c') {
			return true
		}
	}
	return false
}

// maxCalls caps how many shell function calls one check follows.
const maxCalls = 256

// call checks the body of a function the command defined, with the call's
// arguments as its positional parameters and the call's input as its
// standard input. Recursion is followed MaxDepth calls deep.
func (c *checker) call(name string, args []string, input []piece, depth int) error {
	if c.callDepth >= MaxDepth {
		return nil
	}
	c.calls++
	if c.calls > maxCalls {
		return &Error{Kind: ErrTooComplex, Detail: fmt.Sprintf("the command makes more than %d shell function calls", maxCalls)}
	}
	saved := map[string]string{}
	for _, p := range positionalParams {
		if v, ok := c.vars[p]; ok {
			saved[p] = v
		}
		delete(c.vars, p)
	}
	c.setPositional(args[1:])
	c.callDepth++
	err := c.node(c.funcs[name], input, depth)
	c.callDepth--
	for _, p := range positionalParams {
		delete(c.vars, p)
		if v, ok := saved[p]; ok {
			c.vars[p] = v
		}
	}
	return err
}

// positionalParams are the variables a function call sets and restores.
var positionalParams = []string{"@", "*", "#", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// setPositional sets $1 … $9, $@, $* and $#.
func (c *checker) setPositional(args []string) {
	for i := 1; i <= 9; i++ {
		delete(c.vars, strconv.Itoa(i))
	}
	for i, a := range args {
		if i < 9 {
			c.vars[strconv.Itoa(i+1)] = a
		}
	}
	all := strings.Join(args, " ")
	c.vars["@"], c.vars["*"], c.vars["#"] = all, all, strconv.Itoa(len(args))
}

// readInto sets the variables a read, mapfile or readarray names to what
// reaches its standard input.
func (c *checker) readInto(args []string, input []piece) {
	var vals []string
	for _, p := range input {
		vals = append(vals, p.text)
		if payload, ok := jsonIn(p.text); ok {
			vals = append(vals, payload)
		}
	}
	if len(vals) == 0 {
		return
	}
	withArg := "adinNptu" // read
	if program(args[0]) != "read" {
		withArg = "dnOsuCc" // mapfile, readarray
	}
	var names []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if strings.ContainsRune(withArg, rune(a[len(a)-1])) && i+1 < len(args) {
				if a[len(a)-1] == 'a' {
					names = append(names, args[i+1])
				}
				i++
			}
			continue
		}
		names = append(names, a)
	}
	if len(names) == 0 {
		names = []string{"REPLY", "MAPFILE"}
	}
	for _, n := range names {
		c.setVar(n, vals)
	}
}

// curlReadsConfig reports whether curl reads a config file (-K, --config),
// which then comes from a process substitution or stdin.
func curlReadsConfig(args []string) bool {
	for _, a := range args[1:] {
		if a == "--" {
			return false
		}
		if a == "--config" || strings.HasPrefix(a, "--config=") ||
			len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'K') {
			return true
		}
	}
	return false
}

// curlConfigData are the curl config options whose value is sent as the
// body (or a query or form part).
var curlConfigData = map[string]bool{
	"d": true, "data": true, "data-ascii": true, "data-binary": true, "data-raw": true, "json": true,
	"data-urlencode": true, "url-query": true, "F": true, "form": true, "form-string": true,
}

// curlConfigJSON finds inline JSON in the text of a curl config file: lines
// "data = \"…\"", "--json {…}", "data-raw: '…'".
func curlConfigJSON(text string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimLeft(line, space)
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(strings.TrimPrefix(line, "-"), "-")
		end := strings.IndexAny(line, "=: \t")
		if end < 0 || !curlConfigData[line[:end]] {
			continue
		}
		val := strings.TrimLeft(line[end:], "=: \t")
		switch {
		case strings.HasPrefix(val, `"`):
			var b strings.Builder
			for i := 1; i < len(val) && val[i] != '"'; i++ {
				if val[i] == '\\' && i+1 < len(val) {
					i++
				}
				b.WriteByte(val[i])
			}
			val = b.String()
		case strings.HasPrefix(val, "'"):
			val = strings.Trim(val, "'")
		}
		if strings.HasPrefix(val, "@") {
			continue
		}
		if looksJSON(val) {
			return strings.Trim(val, space), true
		}
		if _, v, ok := strings.Cut(val, "="); ok && looksJSON(v) {
			return strings.Trim(v, space), true
		}
	}
	return "", false
}

// jsonIn finds JSON in text that reaches a program's stdin: the whole text
// or, for multi-line input, its first JSON line.
func jsonIn(text string) (string, bool) {
	if looksJSON(text) {
		return strings.Trim(text, space), true
	}
	for _, line := range strings.Split(text, "\n") {
		if looksJSON(line) {
			return strings.Trim(line, space), true
		}
	}
	return "", false
}

// shell checks a shell invocation: the -c string, or the script it reads
// from standard input.
func (c *checker) shell(args []string, input []piece, depth int) error {
	hasC, hasS := false, false
	var positional []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "--"):
		case (strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+")) && len(a) > 1:
			hasC = hasC || strings.ContainsRune(a[1:], 'c')
			hasS = hasS || strings.ContainsRune(a[1:], 's')
		default:
			positional = append(positional, a)
		}
	}
	switch {
	case hasC:
		if len(positional) == 0 {
			return nil
		}
		return c.script(positional[0], depth+1)
	case len(positional) == 0 || hasS:
		for _, p := range input {
			if err := c.script(p.text, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// finding is inline JSON found in one command line, with the edits that
// turn it into the allowed form.
type finding struct {
	fields  []string // the whole command line, wrappers included
	off     int      // index of the program in fields
	payload string
	via     string
	// edits replace fields by index; a "" value removes the field.
	edits map[int]string
	// stdin is true when the allowed form feeds the file on stdin.
	stdin bool
}

func (f *finding) err(prog string) error {
	out := make([]string, 0, len(f.fields))
	for i, fl := range f.fields {
		if e, ok := f.edits[i]; ok {
			if e == "" {
				continue
			}
			fl = e
		}
		out = append(out, fl)
	}
	return &Error{Kind: ErrInlineJSON, Program: prog, Via: f.via, Payload: f.payload, Allowed: allowedForm(f.payload, out, f.stdin)}
}

// set records the payload, trimmed of surrounding white space, and how it
// was handed over; it returns true so that a check can return its result.
func (f *finding) set(payload, via string) bool {
	f.payload, f.via = strings.Trim(payload, space), via
	return true
}

func (f *finding) edit(argIndex int, s string) { f.edits[f.off+argIndex] = s }

// clientCheck inspects a client's arguments and reports a finding.
type clientCheck func(f *finding, args []string) bool

func httpClient(name string, args []string) clientCheck {
	switch name {
	case "curl", "curlie":
		return checkCurl
	case "wget", "wget2":
		return checkWget
	case "http", "https", "xh", "xhs":
		return checkHTTPie
	case "grpcurl":
		return checkGrpcurl
	case "gh":
		if len(args) > 1 && args[1] == "api" {
			return checkGhAPI
		}
	}
	return nil
}

// optValue splits option i of args into name and value: "--data=v",
// "--data v". It returns the index of the value field (i or i+1) or -1.
func optValue(args []string, i int) (name, val string, at int, attached bool) {
	name, val, ok := strings.Cut(args[i], "=")
	if ok {
		return name, val, i, true
	}
	if i+1 < len(args) {
		return name, args[i+1], i + 1, false
	}
	return name, "", -1, false
}

// curl short options that take a value.
const curlShortArg = "AbcCdDeEFHKmoPQrtTuUwxXyYz"

var curlLong = map[string]string{
	"--data": "data", "--data-ascii": "data", "--data-binary": "data", "--json": "data",
	"--data-raw": "raw", "--data-urlencode": "urlencode", "--url-query": "urlencode", "--variable": "urlencode",
	"--form": "form", "--form-string": "formstring",
}

func checkCurl(f *finding, args []string) bool {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return false
		case strings.HasPrefix(a, "--"):
			name, val, at, attached := optValue(args, i)
			kind, ok := curlLong[name]
			if !ok || at < 0 {
				continue
			}
			if curlValue(f, kind, name, val, at, attached) {
				return true
			}
			i = at
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				ch := a[j]
				if !strings.ContainsRune(curlShortArg, rune(ch)) {
					continue
				}
				val, at, attached := a[j+1:], i, true
				if val == "" {
					if i+1 >= len(args) {
						break
					}
					val, at, attached = args[i+1], i+1, false
				}
				kind := ""
				switch ch {
				case 'd':
					kind = "data"
				case 'F':
					kind = "form"
				}
				if kind != "" && curlValue(f, kind, "-"+string(ch), val, at, attached) {
					if e := f.edits[f.off+at]; attached && !strings.HasPrefix(e, "--") {
						// Keep the cluster, swap only the value.
						f.edit(at, a[:j+1]+e)
					}
					return true
				}
				i = at
				break
			}
		}
	}
	return false
}

// curlValue checks one data option value. On a finding it records the
// edit of field at (the value, or the "--opt=value" field when attached).
func curlValue(f *finding, kind, opt, val string, at int, attached bool) bool {
	prefix := ""
	if attached && strings.HasPrefix(opt, "--") {
		prefix = opt + "="
	}
	switch kind {
	case "data", "raw":
		if kind == "data" && strings.HasPrefix(val, "@") {
			return false
		}
		if looksJSON(val) {
			if kind == "raw" {
				prefix = strings.Replace(prefix, "--data-raw", "--data-binary", 1)
				if !attached {
					f.edit(at-1, "--data-binary")
				}
			}
			f.edit(at, prefix+"@"+FileHint)
			return f.set(val, opt)
		}
		if name, v, ok := strings.Cut(val, "="); ok && looksJSON(v) {
			if attached {
				f.edit(at, "--data-urlencode="+name+"@"+FileHint)
			} else {
				f.edit(at-1, "--data-urlencode")
				f.edit(at, name+"@"+FileHint)
			}
			return f.set(v, opt)
		}
	case "urlencode":
		content, name := val, ""
		if n, v, ok := strings.Cut(val, "="); ok {
			name, content = n, v
		} else if strings.Contains(val, "@") {
			return false // name@file or @file
		}
		if looksJSON(content) {
			f.edit(at, prefix+name+"@"+FileHint)
			return f.set(content, opt)
		}
	case "form", "formstring":
		name, content, ok := strings.Cut(val, "=")
		if !ok || kind == "form" && (strings.HasPrefix(content, "@") || strings.HasPrefix(content, "<")) {
			return false
		}
		payload, suffix := jsonPrefix(content)
		if looksJSON(payload) {
			if kind == "formstring" {
				prefix = strings.Replace(prefix, "--form-string", "--form", 1)
				if !attached {
					f.edit(at-1, "--form")
				}
			}
			f.edit(at, prefix+name+"=<"+FileHint+suffix)
			return f.set(payload, opt)
		}
	}
	return false
}

func checkWget(f *finding, args []string) bool {
	for i := 1; i < len(args); i++ {
		name, val, at, attached := optValue(args, i)
		if name != "--post-data" && name != "--body-data" {
			continue
		}
		if at < 0 {
			return false
		}
		if looksJSON(val) {
			file := strings.Replace(name, "-data", "-file", 1)
			if attached {
				f.edit(at, file+"="+FileHint)
			} else {
				f.edit(i, file)
				f.edit(at, FileHint)
			}
			return f.set(val, name)
		}
		i = at
	}
	return false
}

func checkHTTPie(f *finding, args []string) bool {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--raw" || strings.HasPrefix(a, "--raw=") {
			_, val, at, attached := optValue(args, i)
			if at >= 0 && looksJSON(val) {
				f.edit(i, "")
				if !attached {
					f.edit(at, "")
				}
				f.stdin = true
				return f.set(val, "--raw")
			}
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		if name, val, ok := strings.Cut(a, ":="); ok && !strings.HasPrefix(val, "@") && looksJSON(val) {
			f.edit(i, name+":=@"+FileHint)
			return f.set(val, name+":=")
		}
	}
	return false
}

func checkGrpcurl(f *finding, args []string) bool {
	for i := 1; i < len(args); i++ {
		name, val, at, attached := optValue(args, i)
		if name != "-d" && name != "--d" {
			continue
		}
		if at < 0 {
			return false
		}
		if val != "@" && looksJSON(val) {
			if attached {
				f.edit(at, name+"=@")
			} else {
				f.edit(at, "@")
			}
			f.stdin = true
			return f.set(val, "-d")
		}
		i = at
	}
	return false
}

func checkGhAPI(f *finding, args []string) bool {
	for i := 2; i < len(args); i++ {
		a := args[i]
		var opt, val string
		at, attached := -1, false
		switch {
		case a == "-f" || a == "-F" || a == "--field" || a == "--raw-field":
			if i+1 < len(args) {
				opt, val, at = a, args[i+1], i+1
			}
		case strings.HasPrefix(a, "--field=") || strings.HasPrefix(a, "--raw-field="):
			opt, val, _ = strings.Cut(a, "=")
			at, attached = i, true
		case (strings.HasPrefix(a, "-f") || strings.HasPrefix(a, "-F")) && len(a) > 2:
			opt, val, at, attached = a[:2], a[2:], i, true
		default:
			continue
		}
		if at < 0 {
			return false
		}
		key, v, ok := strings.Cut(val, "=")
		if ok && !strings.HasPrefix(v, "@") && looksJSON(v) {
			if attached {
				f.edit(at, "-F"+key+"=@"+FileHint)
			} else {
				f.edit(at-1, "-F")
				f.edit(at, key+"=@"+FileHint)
			}
			return f.set(v, opt)
		}
		i = at
	}
	return false
}

// generic catches JSON in any other argument of an HTTP client: the whole
// argument, or the value after its first "=".
func generic(f *finding, args []string) bool {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.Contains(a, "://") {
			continue
		}
		if looksJSON(a) {
			f.edit(i, "@"+FileHint)
			return f.set(a, "an argument")
		}
		if name, v, ok := strings.Cut(a, "="); ok && looksJSON(v) {
			f.edit(i, name+"=@"+FileHint)
			return f.set(v, name+"=")
		}
	}
	return false
}
