package bashguard

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// program is the command name a field runs: its base name, so that
// /usr/bin/curl is curl.
func program(f string) string {
	if i := strings.LastIndexByte(f, '/'); i >= 0 {
		return f[i+1:]
	}
	return f
}

// runOpts carry what a wrapper passes on to the command it runs.
type runOpts struct {
	// noFunc: command/builtin run the program, not a function of that name.
	noFunc bool
	// line is the whole command line as written (wrappers included) and
	// off the index of the command in it, for the allowed form.
	line []string
	off  int
}

// call runs a simple command; in, when set, is the standard input its
// redirections give it, applied once its words are expanded.
func (c *checker) call(x *syntax.CallExpr, in *reader) stream {
	if c.depth == 1 {
		c.line, c.col = int(x.Pos().Line()), int(x.Pos().Col())
	}
	if len(x.Args) == 0 {
		c.assign(x.Assigns, false)
		return nil
	}
	if out, ok := c.alias(x, in); ok {
		return out
	}
	// NAME=value before a command is the command's environment; the guard
	// keeps it (a child shell sees it).
	c.assign(x.Assigns, true)
	pending := make(map[string]bool, len(c.outProcs))
	for p := range c.outProcs {
		pending[p] = true
	}
	fields := c.fields(x.Args...)
	if in != nil {
		c.in = in
	}
	if c.b.err != nil || len(fields) == 0 {
		return nil
	}
	if len(fields) == 1 && fields[0] == "exec" {
		// exec without a command: its redirections stay for the rest of
		// the shell (exec < <(…), exec 3<<<…).
		c.execGen++
		c.record(Command{Name: "exec", Args: fields})
		return nil
	}
	stdin := c.in.rest()
	out := c.run(fields, runOpts{})
	for _, p := range keysNotIn(c.outProcs, pending) {
		ps := c.outProcs[p]
		delete(c.outProcs, p)
		c.feedProc(ps, c.cat(slices.Clone(out), stdin))
	}
	c.sc.vars["_"] = fields[len(fields)-1]
	return out
}

func keysNotIn(m map[string]*syntax.ProcSubst, old map[string]bool) []string {
	var out []string
	for k := range m {
		if !old[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// alias expands an alias the command defined: its value replaces the
// first word, and the result is read again as shell text.
func (c *checker) alias(x *syntax.CallExpr, in *reader) (stream, bool) {
	w := x.Args[0]
	name := w.Lit()
	val, ok := c.sc.aliases[name]
	if name == "" || !ok || c.inAlias[name] || len(w.Parts) != 1 {
		return nil, false
	}
	start, end := int(w.End().Offset()), int(x.End().Offset())
	if end > len(c.src) || start > end {
		return nil, false
	}
	pre := ""
	if len(x.Assigns) > 0 {
		if from := int(x.Pos().Offset()); from <= int(w.Pos().Offset()) {
			pre = c.src[from:w.Pos().Offset()]
		}
	}
	c.inAlias[name] = true
	if in != nil {
		c.in = in
	}
	out := c.script(pre+val+c.src[start:end], []string{"alias " + name})
	delete(c.inAlias, name)
	return out, true
}

// run runs one resolved command line and returns what it prints.
func (c *checker) run(fields []string, o runOpts) stream {
	if len(fields) == 0 || !c.b.step() {
		return nil
	}
	if o.line == nil {
		o.line, o.off = fields, 0
	}
	prog := fields[0]
	if hasMarks(prog) {
		return c.dynamic(fields, o)
	}
	name := program(prog)
	if p, ok := c.sc.hashed[prog]; ok {
		name = program(p)
	}
	if isProcExe(prog) {
		name = "bash" // /proc/self/exe is the shell running the command
	}
	if !o.noFunc && !strings.Contains(prog, "/") {
		if _, ok := c.sc.funcs[prog]; ok {
			c.record(Command{Name: prog, Args: shownAll(fields)})
			return c.callFunc(prog, fields[1:])
		}
	}
	idx := c.record(Command{Name: name, Args: shownAll(fields)})
	if w, ok := wrappers[name]; ok {
		return c.wrapper(name, w, fields, idx, o)
	}
	switch {
	case shells[name]:
		return c.shell(name, fields, idx)
	case httpClients[name] || name == "gh" && len(fields) > 1 && fields[1] == "api" || rawClients[name]:
		return c.client(name, fields, idx, o)
	}
	switch name {
	case "eval":
		c.a.Commands[idx].Shell = &ShellUse{From: "argument", Known: true}
		c.code(strings.Join(fields[1:], " "), "eval", []string{"eval"}, idx)
		return nil
	case "source", ".":
		return c.source(fields, idx)
	case "alias":
		c.defineAliases(fields[1:])
		return nil
	case "unalias":
		for _, a := range fields[1:] {
			delete(c.sc.aliases, a)
		}
		return nil
	case "hash":
		c.hash(fields[1:])
		return nil
	case "trap":
		c.trap(fields[1:], idx)
		return nil
	case "set":
		c.set(fields[1:])
		return nil
	case "shift":
		n := 1
		if len(fields) > 1 {
			n, _ = strconv.Atoi(fields[1])
		}
		if n > 0 && n <= len(c.sc.pos) {
			c.sc.pos = c.sc.pos[n:]
		}
		return nil
	case "shopt":
		if slices.Contains(fields, "-s") && slices.Contains(fields, "xpg_echo") {
			c.sc.posix = true
		}
		return nil
	case "read":
		c.read(fields[1:])
		return nil
	case "mapfile", "readarray":
		c.mapfile(fields[1:])
		return nil
	case "let":
		for _, e := range fields[1:] {
			c.arithText(e, "let")
		}
		return nil
	case "export", "declare", "typeset", "local", "readonly":
		c.declFields(name, fields[1:])
		return nil
	case "printf":
		if len(fields) > 2 && fields[1] == "-v" {
			c.nameSubscript(fields[2])
			c.setVar(strings.SplitN(fields[2], "[", 2)[0], []string{c.printf(fields[3:])})
			return nil
		}
	case "xargs":
		return c.xargs(fields, o)
	case "find":
		return c.find(fields)
	}
	if runners[name] {
		return c.runner(name, fields, idx, o)
	}
	if out, ok := c.output(name, fields); ok {
		return out
	}
	return c.unknownProgram(name, fields, o)
}

// isProcExe reports whether p names the running process's executable
// (/proc/self/exe, /proc/$$/exe), which is the shell.
func isProcExe(p string) bool {
	return strings.HasPrefix(p, "/proc/") && strings.HasSuffix(p, "/exe")
}

// shownAll renders fields for the facts.
func shownAll(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = shown(f)
	}
	return out
}

// wrapper describes a command that runs another command given in its
// arguments.
type wrapper struct {
	// short are the short option letters that take a value, long the long
	// options that do (without "--").
	short string
	long  []string
	// positional is how many operands come before the command
	// (timeout's DURATION).
	positional int
	// assigns is true when NAME=VALUE operands may precede the command.
	assigns bool
	// noRun are options with which the wrapper does not run a command
	// (command -v).
	noRun []string
	// script are options whose value is a command line split into
	// arguments (env -S).
	script []string
	// noFunc: the wrapped name is a program, not a shell function.
	noFunc bool
}

var wrappers = map[string]wrapper{
	"timeout":   {short: "sk", long: []string{"signal", "kill-after"}, positional: 1},
	"env":       {short: "uCSP", long: []string{"unset", "chdir", "split-string", "block-signal", "default-signal", "ignore-signal"}, assigns: true, script: []string{"-S", "--split-string"}, noFunc: true},
	"nice":      {short: "n", long: []string{"adjustment"}, noFunc: true},
	"nohup":     {noFunc: true},
	"command":   {noRun: []string{"-v", "-V"}, noFunc: true},
	"builtin":   {noFunc: true},
	"exec":      {short: "a", noFunc: true},
	"time":      {short: "fo", long: []string{"format", "output"}},
	"sudo":      {short: "ugCDhprtUT", long: []string{"user", "group", "close-from", "chdir", "host", "prompt", "role", "type", "other-user", "command-timeout"}, assigns: true, noRun: []string{"-l", "--list", "-v", "--validate", "-k", "-K", "-e", "--edit"}, noFunc: true},
	"doas":      {short: "uC", noFunc: true},
	"stdbuf":    {short: "ioe", long: []string{"input", "output", "error"}, noFunc: true},
	"setsid":    {noFunc: true},
	"ionice":    {short: "cnp", long: []string{"class", "classdata", "pid"}, noFunc: true},
	"chronic":   {noFunc: true},
	"unbuffer":  {noFunc: true},
	"busybox":   {noFunc: true},
	"nsenter":   {short: "tSGmuinpUCr", long: []string{"target", "setuid", "setgid"}, noFunc: true},
	"chrt":      {positional: 1, noFunc: true},
	"taskset":   {positional: 1, noFunc: true},
	"prlimit":   {noFunc: true},
	"unshare":   {noFunc: true},
	"strace":    {short: "eoOpPsSuXaIbE", noFunc: true},
	"ltrace":    {short: "eoOpPsSuXaIbE", noFunc: true},
	"catchsegv": {noFunc: true},
}

// wrapper runs the command a wrapper wraps.
func (c *checker) wrapper(name string, w wrapper, fields []string, idx int, o runOpts) stream {
	args := slices.Clone(fields)
	pos := w.positional
	for i := 1; i < len(args); i++ {
		f := args[i]
		switch {
		case f == "--":
			if i+1 < len(args) && pos == 0 {
				return c.wrapped(name, args, i+1, w, o)
			}
			continue
		case strings.HasPrefix(f, "--"):
			opt, _, hasVal := strings.Cut(f, "=")
			if slices.Contains(w.noRun, opt) {
				return nil
			}
			if slices.Contains(w.script, opt) {
				val, at := f[len(opt)+1:], i
				if !hasVal && i+1 < len(args) {
					val, at = args[i+1], i+1
				}
				args = splice(args, i, at, c.splitString(val))
				i--
				continue
			}
			if !hasVal && slices.Contains(w.long, opt[2:]) {
				i++
			}
			continue
		case strings.HasPrefix(f, "-") && len(f) > 1 && !(name == "chrt" || name == "taskset") || (name == "chrt" || name == "taskset") && strings.HasPrefix(f, "-") && !isNumber(f[1:]):
			if slices.Contains(w.noRun, f) {
				return c.lookup(name, args[i+1:])
			}
			// A cluster of short options: -vS'…', -n5, -k 5.
			for j := 1; j < len(f); j++ {
				ch := f[j]
				if slices.Contains(w.noRun, "-"+string(ch)) {
					return c.lookup(name, args[i+1:])
				}
				if !strings.ContainsRune(w.short, rune(ch)) {
					continue
				}
				val, at := f[j+1:], i
				if val == "" && i+1 < len(args) {
					val, at = args[i+1], i+1
				}
				if slices.Contains(w.script, "-"+string(ch)) {
					keep := f[:j]
					repl := c.splitString(val)
					if keep != "-" {
						repl = append([]string{keep}, repl...)
					}
					args = splice(args, i, at, repl)
					i--
				} else {
					i = at
				}
				break
			}
			continue
		case w.assigns && isAssign(f):
			n, v, _ := strings.Cut(f, "=")
			c.setVar(n, []string{v})
			c.sc.exported[n] = true
			continue
		case pos > 0:
			pos--
			continue
		}
		return c.wrapped(name, args, i, w, o)
	}
	return nil
}

// lookup is what a wrapper's no-run form prints: command -v NAME prints
// where NAME is.
func (c *checker) lookup(name string, args []string) stream {
	if name != "command" {
		return nil
	}
	out, _ := c.output("which", append([]string{"which"}, args...))
	return out
}

// wrapped runs args[at:], the command of a wrapper.
func (c *checker) wrapped(name string, args []string, at int, w wrapper, o runOpts) stream {
	var out stream
	line, off := o.line, o.off+at
	if len(args) != len(o.line[o.off:]) {
		// env -S split a string: the allowed form starts from the
		// command the string holds.
		line, off = args, at
	}
	c.withVia([]string{name}, func() {
		out = c.run(args[at:], runOpts{noFunc: w.noFunc, line: line, off: off})
	})
	return out
}

// splice replaces args[from:to+1] with repl.
func splice(args []string, from, to int, repl []string) []string {
	out := append(slices.Clone(args[:from]), repl...)
	return append(out, args[to+1:]...)
}

// splitString splits env -S's string into arguments the way env does
// (quotes, backslashes, ${VAR}), read here as shell words.
func (c *checker) splitString(s string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(s), "")
	if err != nil || len(f.Stmts) != 1 {
		c.unknownCode(s, "env -S splits a string the guard cannot read into a command", "write the command and its arguments directly instead of env -S")
		return nil
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		c.unknownCode(s, "env -S splits a string that is not one simple command", "write the command directly")
		return nil
	}
	var out []string
	for _, a := range call.Assigns {
		out = append(out, a.Name.Value+"="+c.word(a.Value))
	}
	return append(out, c.fields(call.Args...)...)
}

func isAssign(f string) bool {
	name, _, ok := strings.Cut(f, "=")
	return ok && isName(name)
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

var shells = map[string]bool{"bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "rbash": true, "yash": true, "posh": true, "lksh": true}

// shell runs a shell invocation: the -c string, the script it reads from
// its standard input, or a script file.
func (c *checker) shell(name string, fields []string, idx int) stream {
	hasC, hasS := false, false
	var positional []string
	for i := 1; i < len(fields); i++ {
		a := fields[i]
		switch {
		case a == "--" || a == "-":
			positional = append(positional, fields[i+1:]...)
			i = len(fields)
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "--"):
		case (strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+")) && len(a) > 1:
			hasC = hasC || strings.ContainsRune(a[1:], 'c')
			hasS = hasS || strings.ContainsRune(a[1:], 's')
			if strings.ContainsAny(a[1:], "oO") {
				i++ // -eo pipefail
			}
		default:
			positional = append(positional, fields[i:]...)
			i = len(fields)
		}
	}
	saved := c.sc
	defer func() { c.sc = saved }()
	switch {
	case hasC:
		if len(positional) == 0 {
			return nil // bash: -c: option requires an argument
		}
		c.sc = saved.child(name)
		if len(positional) > 1 {
			c.sc.arg0 = positional[1]
		}
		if len(positional) > 2 {
			c.sc.pos = slices.Clone(positional[2:])
		}
		c.a.Commands[idx].Shell = &ShellUse{From: "argument", Known: true}
		return c.code(positional[0], name+" -c", []string{name + " -c"}, idx)
	case hasS || len(positional) == 0:
		c.sc = saved.child(name)
		c.sc.pos = slices.Clone(positional)
		c.a.Commands[idx].Shell = &ShellUse{From: "stdin", Known: true}
		return c.codeStream(c.in.readAll(), name, idx)
	}
	c.sc = saved.child(name)
	c.sc.arg0, c.sc.pos = positional[0], slices.Clone(positional[1:])
	return c.scriptFile(positional[0], name, idx)
}

// scriptFile runs the script a shell or source reads from path.
func (c *checker) scriptFile(path, via string, idx int) stream {
	if text, ok := c.files[path]; ok {
		c.a.Commands[idx].Shell = &ShellUse{From: "file", Known: true}
		return c.code(text, via, []string{via + " " + path}, idx)
	}
	s := c.open(path)
	if len(s) == 1 && s[0].kind == segFile {
		// A script on disk is not part of the command; the guard does
		// not read files.
		c.a.Commands[idx].Shell = &ShellUse{From: "file", Known: false}
		return stream{{kind: segProgram, via: "the output of " + via}}
	}
	from := "stdin"
	if _, ok := c.fds[fdPath(path)]; ok {
		from = "process substitution"
	}
	c.a.Commands[idx].Shell = &ShellUse{From: from, Known: true}
	return c.codeStream(s, via, idx)
}

// codeStream runs what a shell reads as its program from a stream.
func (c *checker) codeStream(s stream, via string, idx int) stream {
	var out stream
	for _, g := range s {
		switch {
		case g.kind == segText && !g.json:
			out = c.cat(out, c.code(g.text, via, []string{via + " < " + g.via}, idx))
		case g.kind == segFile:
			// A script file on disk: not part of the command, and the
			// guard does not read files, so it does not know the code
			// (as for bash script.sh).
			c.a.Commands[idx].Shell.Known = false
		default:
			c.a.Commands[idx].Shell.Known = false
			c.unknownCode(via+" < "+g.via, via+" reads its program from "+g.via+", which the guard cannot read",
				"save the script to a file and run the file (bash script.sh), or write its commands directly")
		}
	}
	return out
}

// code runs shell code given as text. Code that holds text the guard
// could not follow, or that is wholly computed at run time, cannot be
// read and is refused; values from the environment inside otherwise
// known code are just words.
func (c *checker) code(src, what string, via []string, idx int) stream {
	if strings.ContainsRune(src, markDerived) || strings.ContainsRune(src, markJSON) ||
		strings.Trim(src, " \t\n"+string(markExternal)) == "" && strings.ContainsRune(src, markExternal) {
		if idx >= 0 && c.a.Commands[idx].Shell != nil {
			c.a.Commands[idx].Shell.Known = false
		}
		c.unknownCode(src, what+" runs code built at run time ("+shown(src)+")",
			"write the commands directly instead of building them in a variable or a command's output and running them through "+what)
		return nil
	}
	return c.script(src, via)
}

// source runs source FILE [ARGS] / . FILE in the current shell.
func (c *checker) source(fields []string, idx int) stream {
	if len(fields) < 2 {
		return nil
	}
	if len(fields) > 2 {
		saved := c.sc.pos
		c.sc.pos = slices.Clone(fields[2:])
		defer func() { c.sc.pos = saved }()
	}
	return c.scriptFile(fields[1], fields[0], idx)
}

// defineAliases records alias NAME=VALUE and analyses each value where it
// is defined: something the guard cannot see may use it.
func (c *checker) defineAliases(args []string) {
	for _, a := range args {
		name, val, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			continue
		}
		c.sc.aliases[name] = val
		if !c.inAlias[name] {
			c.inAlias[name] = true
			c.defined++
			c.code(val, "alias "+name, []string{"alias " + name}, -1)
			c.defined--
			delete(c.inAlias, name)
		}
	}
}

// hash applies hash -p PATH NAME (NAME then runs PATH), -d and -r.
func (c *checker) hash(args []string) {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-r":
			clear(c.sc.hashed)
		case "-p":
			if i+2 < len(args) {
				c.sc.hashed[args[i+2]] = args[i+1]
				i += 2
			}
		case "-d":
			if i+1 < len(args) {
				delete(c.sc.hashed, args[i+1])
				i++
			}
		}
	}
}

// trap runs a trap's action as code: it runs when the signal comes or
// the shell exits.
func (c *checker) trap(args []string, idx int) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		if args[0] == "-l" || args[0] == "-p" || args[0] == "-P" {
			return
		}
		args = args[1:]
	}
	if len(args) < 2 || args[0] == "-" || args[0] == "" || isNumber(args[0]) && len(args) == 1 {
		return
	}
	c.a.Commands[idx].Shell = &ShellUse{From: "trap", Known: true}
	c.code(args[0], "trap", []string{"trap " + strings.Join(args[1:], " ")}, idx)
}

// set applies set's options and positional parameters.
func (c *checker) set(args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.setPositional(args[i+1:])
			return
		case a == "-o" || a == "+o":
			if i+1 < len(args) && args[i+1] == "allexport" {
				c.sc.allExport = a == "-o"
			}
			i++
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.ContainsRune(a, 'a') {
				c.sc.allExport = a[0] == '-'
			}
		default:
			c.setPositional(args[i:])
			return
		}
	}
}

// read sets the variables read names from one line of its input.
func (c *checker) read(args []string) {
	delim, raw := byte('\n'), false
	var names []string
	arrayName := ""
	in := c.in
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			names = append(names, args[i:]...)
			break
		}
		for j := 1; j < len(a); j++ {
			ch := a[j]
			if ch == 'r' {
				raw = true
				continue
			}
			if !strings.ContainsRune("adinNptu", rune(ch)) {
				continue
			}
			val := a[j+1:]
			if val == "" && i+1 < len(args) {
				i++
				val = args[i]
			}
			switch ch {
			case 'a':
				arrayName = val
			case 'd':
				delim = 0
				if val != "" {
					delim = val[0]
				}
			case 'u':
				in = &reader{segs: c.fds["/dev/fd/"+val]}
			}
			break
		}
	}
	line, _ := in.readLine(delim)
	if !raw {
		line = unescape(line)
	}
	words := strings.Fields(line)
	if arrayName != "" {
		c.nameSubscript(arrayName)
		a := c.array(arrayName, false)
		for i, w := range words {
			a.put(strconv.Itoa(i), w)
		}
		return
	}
	if len(names) == 0 {
		names = []string{"REPLY"}
	}
	for i, n := range names {
		c.nameSubscript(n)
		val := ""
		switch {
		case len(names) == 1:
			val = strings.Trim(line, " \t")
		case i < len(words) && i == len(names)-1:
			val = strings.Join(words[i:], " ")
		case i < len(words):
			val = words[i]
		}
		c.setVar(strings.SplitN(n, "[", 2)[0], []string{val})
	}
}

// mapfile fills an array with the lines of its input.
func (c *checker) mapfile(args []string) {
	name, delim, callback := "MAPFILE", byte('\n'), ""
	in := c.in
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			name = a
			continue
		}
		if len(a) == 2 && strings.ContainsRune("dnOsuCc", rune(a[1])) && i+1 < len(args) {
			i++
			switch a[1] {
			case 'd':
				delim = 0
				if args[i] != "" {
					delim = args[i][0]
				}
			case 'u':
				in = &reader{segs: c.fds["/dev/fd/"+args[i]]}
			case 'C':
				callback = args[i]
			}
		}
	}
	c.nameSubscript(name)
	arr := c.array(name, false)
	for i := 0; ; i++ {
		line, ok := in.readLine(delim)
		if !ok || !c.b.step() {
			break
		}
		arr.put(strconv.Itoa(i), line)
		if callback != "" && i < maxIterations {
			// mapfile -C evaluates "callback index line".
			c.code(callback+" "+strconv.Itoa(i)+" "+shellQuote(line), "mapfile -C", []string{"mapfile -C"}, -1)
		}
	}
}

// declFields applies export/declare … reached through a wrapper or eval,
// where the parser saw plain words.
func (c *checker) declFields(name string, args []string) {
	flags := ""
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			flags += a[1:]
			continue
		}
		n, v, ok := strings.Cut(a, "=")
		c.nameSubscript(n)
		if name == "export" || strings.Contains(flags, "x") {
			c.sc.exported[n] = true
		}
		if !ok {
			continue
		}
		if strings.Contains(flags, "n") {
			c.sc.refs[n] = v
			continue
		}
		c.setVar(strings.SplitN(n, "[", 2)[0], []string{v})
	}
}

// nameSubscript checks the subscript of a variable name given as text
// (read 'a[$(cmd)]', printf -v 'a[…]'): bash evaluates it as arithmetic.
func (c *checker) nameSubscript(n string) {
	if i := strings.IndexByte(n, '['); i > 0 && strings.HasSuffix(n, "]") {
		c.arithText(n[i+1:len(n)-1], "the subscript of "+n)
	}
}

// arithText checks text bash evaluates as an arithmetic expression.
func (c *checker) arithText(s, what string) {
	if strings.ContainsRune(s, markDerived) {
		c.arithValue(s, what, 0)
		return
	}
	e, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Arithmetic(strings.NewReader(s))
	if err != nil {
		return
	}
	c.runSubsts(e, what)
	c.arithVars(e, 1)
}

// printf formats like printf(1), reusing the format while arguments are
// left.
func (c *checker) printf(args []string) string {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return ""
	}
	format, rest := args[0], args[1:]
	var b strings.Builder
	for range maxIterations {
		cfg := c.cfg()
		text, n, err := expand.Format(cfg, format, rest)
		c.release(cfg)
		if err != nil {
			return strings.Join(args, " ")
		}
		b.WriteString(text)
		if n == 0 || n >= len(rest) {
			break
		}
		rest = rest[n:]
	}
	out := b.String()
	c.b.text(len(out))
	return out
}

// runners run a command line given as one of their arguments.
var runners = map[string]bool{"watch": true, "flock": true, "su": true, "runuser": true, "script": true, "ssh": true,
	"parallel": true, "tmux": true, "screen": true, "entr": true, "sg": true}

// runner runs what a runner runs: the command line its arguments make.
func (c *checker) runner(name string, fields []string, idx int, o runOpts) stream {
	args := fields[1:]
	via := []string{name}
	switch name {
	case "watch":
		// watch joins its arguments and runs them with sh -c (-x: exec).
		exec := false
		for len(args) > 0 && strings.HasPrefix(args[0], "-") {
			a := args[0]
			args = args[1:]
			switch {
			case a == "-x" || a == "--exec":
				exec = true
			case a == "--":
				goto done
			case a == "-n" || a == "--interval" || a == "-q" || a == "--equexit":
				if len(args) > 0 {
					args = args[1:]
				}
			}
		}
	done:
		if exec {
			var out stream
			c.withVia(via, func() { out = c.run(args, runOpts{}) })
			return out
		}
		c.a.Commands[idx].Shell = &ShellUse{From: "argument", Known: true}
		return c.code(strings.Join(args, " "), "watch", via, idx)
	case "ssh":
		// ssh HOST CMD…: the remote shell runs the joined arguments.
		for len(args) > 0 && strings.HasPrefix(args[0], "-") {
			a := args[0]
			args = args[1:]
			if len(a) == 2 && strings.ContainsRune("BbcDEeFIiJLlmOoPpQRSWw", rune(a[1])) && len(args) > 0 {
				args = args[1:]
			}
		}
		if len(args) < 2 {
			return nil
		}
		c.a.Commands[idx].Shell = &ShellUse{From: "argument", Known: true}
		return c.code(strings.Join(args[1:], " "), "ssh", via, idx)
	}
	// su -c, runuser -c, script -c, flock -c, sg GROUP -c: the value is a
	// command line; flock FILE CMD… runs CMD; others run the arguments
	// that hold a whole command line.
	for i := 0; i < len(args); i++ {
		a := args[i]
		if (a == "-c" || a == "--command") && i+1 < len(args) {
			c.a.Commands[idx].Shell = &ShellUse{From: "argument", Known: true}
			return c.code(args[i+1], name+" -c", via, idx)
		}
		if v, ok := strings.CutPrefix(a, "--command="); ok {
			c.a.Commands[idx].Shell = &ShellUse{From: "argument", Known: true}
			return c.code(v, name+" -c", via, idx)
		}
	}
	if out, ok := c.laterCommand(fields, o); ok {
		return out
	}
	var out stream
	for _, f := range args {
		if strings.ContainsAny(f, " \t\n;|&") {
			out = c.cat(out, c.code(f, name, via, idx))
		}
	}
	return out
}

// laterCommand handles a program the guard does not know whose later
// arguments start an HTTP client, a shell with a script, or eval (strace
// curl …, docker exec ctr curl …, uv run bash -c …): that is where the
// command it runs starts.
func (c *checker) laterCommand(fields []string, o runOpts) (stream, bool) {
	for i := 1; i < len(fields); i++ {
		n := program(fields[i])
		if hasMarks(fields[i]) {
			continue
		}
		if httpClients[n] || rawClients[n] || n == "gh" && i+1 < len(fields) && fields[i+1] == "api" || n == "eval" || shells[n] && len(fields) > i+1 {
			var out stream
			c.withVia([]string{program(fields[0])}, func() {
				out = c.run(fields[i:], runOpts{line: o.line, off: o.off + i})
			})
			return out, true
		}
	}
	return nil, false
}

// unknownProgram handles a program the guard has no model of.
func (c *checker) unknownProgram(name string, fields []string, o runOpts) stream {
	if out, ok := c.laterCommand(fields, o); ok {
		return out
	}
	if _, ok := c.sc.funcs["command_not_found_handle"]; ok && !builtins[name] && !strings.Contains(fields[0], "/") {
		// bash calls the handler with the command line when the program
		// does not exist; the guard cannot tell whether it does.
		c.callFunc("command_not_found_handle", fields)
	}
	return c.programOutput(name, fields)
}

// programOutput is the output of a program the guard does not model:
// derived from the command's text when its input or arguments could hold
// JSON, else outside data.
func (c *checker) programOutput(name string, fields []string) stream {
	in := c.in.rest()
	derived := in.mayHoldJSON()
	for _, f := range fields[1:] {
		derived = derived || mayHoldJSON(f)
	}
	if derived {
		return stream{{kind: segDerived, via: "the output of " + name}}
	}
	return stream{{kind: segProgram, via: "the output of " + name}}
}

// builtins are bash builtins, which command_not_found_handle never sees.
var builtins = map[string]bool{"cd": true, "echo": true, "printf": true, "true": true, "false": true, ":": true, "test": true, "[": true,
	"pwd": true, "exit": true, "return": true, "wait": true, "kill": true, "ulimit": true, "umask": true, "unset": true, "type": true,
	"pushd": true, "popd": true, "dirs": true, "jobs": true, "fg": true, "bg": true, "disown": true, "getopts": true, "break": true,
	"continue": true, "times": true, "caller": true, "enable": true, "help": true, "history": true, "logout": true, "suspend": true,
	"complete": true, "compgen": true, "compopt": true, "bind": true, "fc": true}

// xargs runs its command with the items of its input as arguments.
func (c *checker) xargs(fields []string, o runOpts) stream {
	var replace, delim string
	null, perLine := false, false
	var in stream
	readFile := ""
	i := 1
	for ; i < len(fields); i++ {
		a := fields[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		if strings.HasPrefix(a, "--") {
			opt, val, has := strings.Cut(a, "=")
			takes := map[string]bool{"--arg-file": true, "--delimiter": true, "--max-lines": false, "--max-args": true, "--max-procs": true, "--max-chars": true, "--process-slot-var": true, "--eof": false, "--replace": false}
			if t, ok := takes[opt]; ok && t && !has && i+1 < len(fields) {
				i++
				val = fields[i]
			}
			switch opt {
			case "--null":
				null = true
			case "--delimiter":
				delim = val
			case "--replace":
				replace = "{}"
				if has {
					replace = val
				}
			case "--arg-file":
				readFile = val
			case "--max-lines":
				perLine = true
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			ch := a[j]
			if strings.ContainsRune("adELnPsI", rune(ch)) {
				val := a[j+1:]
				if val == "" && i+1 < len(fields) {
					i++
					val = fields[i]
				}
				switch ch {
				case 'a':
					readFile = val
				case 'd':
					delim = val
				case 'I':
					replace = val
				case 'L':
					perLine = true
				}
				break
			}
			switch ch {
			case '0':
				null = true
			case 'i':
				replace = "{}"
				if rest := a[j+1:]; rest != "" {
					replace = rest
				}
				j = len(a)
			case 'l':
				perLine = true
				j = len(a)
			}
		}
	}
	cmd := fields[i:]
	if len(cmd) == 0 {
		cmd = []string{"echo"}
	}
	if readFile != "" {
		in = c.open(readFile)
	} else {
		in = c.in.readAll()
	}
	items := xargsItems(in, null, delim, replace != "" || perLine)
	saved := c.in
	c.in = &reader{} // GNU xargs gives the command /dev/null as stdin
	defer func() { c.in = saved }()
	var out stream
	c.withVia([]string{"xargs"}, func() {
		if replace == "" {
			line := append(slices.Clone(cmd), items...)
			out = c.run(line, runOpts{line: line})
			return
		}
		if len(items) == 0 {
			items = []string{""}
		}
		for k, it := range items {
			if k == maxIterations {
				break
			}
			line := make([]string, len(cmd))
			for n, a := range cmd {
				line[n] = strings.ReplaceAll(a, replace, it)
			}
			out = c.cat(out, c.run(line, runOpts{line: line}))
		}
	})
	return out
}

// xargsItems splits xargs' input into items: at NULs (-0), at a delimiter
// (-d), at newlines (-I, -L), else at blanks with quotes and backslashes
// as xargs reads them. A segment the guard does not know is one item.
func xargsItems(in stream, null bool, delim string, lines bool) []string {
	var items []string
	for _, g := range in {
		if g.kind != segText || g.json {
			items = append(items, g.value())
			continue
		}
		t := g.text
		switch {
		case null:
			items = append(items, nonEmpty(strings.Split(t, "\x00"))...)
		case delim != "":
			d, _, _ := expand.Format(&expand.Config{}, delim, nil)
			if d == "" {
				d = delim
			}
			items = append(items, nonEmpty(strings.Split(t, d[:1]))...)
		case lines:
			for _, l := range strings.Split(t, "\n") {
				if l = strings.TrimLeft(l, " \t"); l != "" {
					items = append(items, xargsUnquote(l)...)
				}
			}
		default:
			items = append(items, xargsUnquote(t)...)
		}
	}
	return items
}

func nonEmpty(s []string) []string {
	return slices.DeleteFunc(s, func(x string) bool { return x == "" })
}

// xargsUnquote splits text at blanks outside quotes, removing quotes and
// backslashes, as xargs does without -0/-d.
func xargsUnquote(t string) []string {
	var items []string
	var b strings.Builder
	inItem := false
	var quote byte
	for i := 0; i < len(t); i++ {
		ch := t[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else {
				b.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, inItem = ch, true
		case ch == '\\' && i+1 < len(t):
			i++
			b.WriteByte(t[i])
			inItem = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inItem {
				items = append(items, b.String())
				b.Reset()
				inItem = false
			}
		default:
			b.WriteByte(ch)
			inItem = true
		}
	}
	if inItem {
		items = append(items, b.String())
	}
	return items
}

// find runs the commands of -exec, -execdir, -ok and -okdir, with {} a
// file name from disk.
func (c *checker) find(fields []string) stream {
	var out stream
	for i := 1; i < len(fields); i++ {
		switch fields[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(fields) && fields[j] != ";" && fields[j] != "+" {
			j++
		}
		cmd := make([]string, 0, j-i-1)
		for _, a := range fields[i+1 : j] {
			cmd = append(cmd, strings.ReplaceAll(a, "{}", string(markExternal)))
		}
		if len(cmd) > 0 {
			c.withVia([]string{"find " + fields[i]}, func() {
				out = c.cat(out, c.run(cmd, runOpts{line: fields, off: i + 1}))
			})
		}
		i = j
	}
	return out
}

// dynamic handles a command whose program name is computed at run time:
// it may be any program. The guard refuses it when, were it an HTTP
// client, it would be handed inline JSON, or, were it a shell, the code
// it would be given would be refused.
func (c *checker) dynamic(fields []string, o runOpts) stream {
	c.record(Command{Args: shownAll(fields), Dynamic: true})
	what := shown(fields[0])
	instead := "write the program's name literally (curl …, not \"$(which curl)\" or \"$CMD\"), and pass JSON bodies from a file (curl -d @file)"
	if strings.ContainsRune(fields[0], markDerived) {
		c.unknown(Unknown{Kind: UnknownProgram, What: what, Reason: "the program's name (" + what + ") is made at run time from text of the command",
			Instead: instead, ReachesHTTP: true, ReachesShell: true})
		return nil
	}
	// As an HTTP client: JSON in its arguments or input.
	if p, via, ok := anyJSON(fields[1:], c.in.rest()); ok {
		c.unknown(Unknown{Kind: UnknownProgram, What: what, Reason: "the program's name (" + what + ") is computed at run time and it is handed JSON (" + shown(p) + ") via " + via,
			Instead: instead, ReachesHTTP: true})
		return nil
	}
	// As a shell: the code in its arguments or input.
	for _, a := range fields[1:] {
		if !strings.ContainsAny(a, " \t\n;|&") {
			continue
		}
		if c.hypothesis(func() { c.code(a, what, []string{what}, -1) }) {
			c.unknown(Unknown{Kind: UnknownProgram, What: what, Reason: "the program's name (" + what + ") is computed at run time, and were it a shell, the code it is given would be refused",
				Instead: instead, ReachesShell: true})
			return nil
		}
	}
	in := c.in.rest()
	if len(in) > 0 && c.hypothesis(func() {
		saved := c.in
		c.in = &reader{}
		for _, g := range in {
			if g.kind == segText && !g.json {
				c.code(g.text, what, []string{what}, -1)
			}
		}
		c.in = saved
	}) {
		c.unknown(Unknown{Kind: UnknownProgram, What: what, Reason: "the program's name (" + what + ") is computed at run time, and were it a shell, the script on its input would be refused",
			Instead: instead, ReachesShell: true})
	}
	return stream{{kind: segProgram, via: "the output of " + what}}
}

// hypothesis runs fn on a scratch analysis and reports whether the guard
// would refuse what fn found.
func (c *checker) hypothesis(fn func()) bool {
	saved := c.a
	c.a = &Analysis{}
	c.hypo++
	fn()
	c.hypo--
	refused := c.a.Verdict() != nil
	c.a = saved
	return refused
}

// anyJSON finds inline JSON in arguments (whole, after a "=", in a URL
// query) or input, as any HTTP client would take it.
func anyJSON(args []string, in stream) (payload, via string, ok bool) {
	for _, a := range args {
		if isJSONValue(a) {
			return a, "an argument", true
		}
		if _, v, ok := strings.Cut(a, "="); ok && isJSONValue(v) {
			return v, "an argument", true
		}
		if _, v, ok := queryJSON(a); ok {
			return v, "a URL query", true
		}
	}
	for _, g := range in {
		if p, ok := g.jsonPayload(); ok {
			return p, g.via, true
		}
	}
	return "", "", false
}
