package bashguard

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// bashBuiltins are bash's builtins: bash runs them without looking for a
// program (unless enable -n turned one off), and a function of the same
// name comes first.
var bashBuiltins = map[string]bool{".": true, ":": true, "[": true, "alias": true, "bg": true, "bind": true, "break": true,
	"builtin": true, "caller": true, "cd": true, "command": true, "compgen": true, "complete": true, "compopt": true, "continue": true,
	"declare": true, "dirs": true, "disown": true, "echo": true, "enable": true, "eval": true, "exec": true, "exit": true,
	"export": true, "false": true, "fc": true, "fg": true, "getopts": true, "hash": true, "help": true, "history": true, "jobs": true,
	"kill": true, "let": true, "local": true, "logout": true, "mapfile": true, "popd": true, "printf": true, "pushd": true, "pwd": true,
	"read": true, "readarray": true, "readonly": true, "return": true, "set": true, "shift": true, "shopt": true, "source": true,
	"suspend": true, "test": true, "times": true, "trap": true, "true": true, "type": true, "typeset": true, "ulimit": true,
	"umask": true, "unalias": true, "unset": true, "wait": true}

// specialBuiltins keep a NAME=value before them in POSIX mode; in bash's
// own mode they do not.
var specialBuiltins = map[string]bool{".": true, ":": true, "break": true, "continue": true, "eval": true, "exec": true, "exit": true,
	"export": true, "readonly": true, "return": true, "set": true, "shift": true, "source": true, "times": true, "trap": true, "unset": true}

// builtinRuns says whether name runs as bash's builtin here: on, off (enable -n), or unsure.
func (c *checker) builtinRuns(name string) tri {
	if !bashBuiltins[name] {
		return off
	}
	switch c.sc.disabled[name] {
	case on:
		return off
	case unsure:
		return unsure
	}
	return on
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
		delete(c.sc.unsure, name)
		if !c.inAlias[name] {
			c.inAlias[name] = true
			c.deferred(func() { c.code(val, "alias "+name, []string{"alias " + name}, -1) })
			delete(c.inAlias, name)
		}
	}
}

// hash applies hash -p PATH NAME (NAME then runs PATH), -d and -r.
func (c *checker) hash(args []string) {
	path, del, show := "", false, false
	var names []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			names = append(names, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			names = append(names, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'r':
				clear(c.sc.hashed)
			case 'd':
				del = true
			case 't':
				// hash -t prints where each name is hashed and changes
				// nothing, whatever else is given (-l still assigns).
				show = true
			case 'p':
				// -p PATH or -pPATH: every name given runs PATH.
				if path = a[j+1:]; path == "" && i+1 < len(args) {
					i++
					path = args[i]
				}
				j = len(a)
			}
		}
	}
	if show {
		return
	}
	for _, n := range names {
		switch {
		case hasMarks(n) && (path != "" || del):
			c.sc.lost = true // which name now runs what is not known
		case path != "":
			c.sc.hashed[n] = path
			delete(c.sc.unsure, n)
		case del:
			delete(c.sc.hashed, n)
		}
	}
}

// trap analyses a trap's action where it is set (for what it may hand
// an HTTP client) and keeps it: it runs when the signal comes or the
// shell exits, with the state of that moment (finishTraps).
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
	code := args[0]
	// Where it is set, for what it may hand an HTTP client; it runs
	// later (finishTraps).
	c.deferred(func() {
		c.code(code, "trap", []string{"trap " + strings.Join(args[1:], " ")}, idx)
	})
	for _, sig := range args[1:] {
		on := strings.TrimPrefix(strings.ToUpper(sig), "SIG")
		c.sc.traps = append(c.sc.traps, trap{code: code, on: on})
		if c.sc.trapped == nil {
			c.sc.trapped = &trapStates{}
		}
		if on == "EXIT" || on == "0" {
			continue
		}
		// Any other trap may fire before any later statement (DEBUG
		// before each, RETURN after a function or source, ERR after a
		// failure, a signal the command sends itself with kill $$).
		state, files := c.trapEffects(code)
		c.sc.volatile = c.sc.volatile || state
		c.sc.trapJSON = c.sc.trapJSON || state && mayHoldJSON(code)
		c.sc.filesVolatile = c.sc.filesVolatile || files
	}
}

// stateBuiltins are the builtins that change the shell's state: what a
// later command finds (variables, functions, aliases, options, the
// directory, the positional parameters, the traps).
var stateBuiltins = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`alias unalias bind builtin caller cd pushd popd command compgen complete compopt declare
		typeset local export readonly unset eval source . exec read mapfile readarray hash enable getopts let set shopt
		shift trap umask ulimit history fc jobs disown wait suspend`) {
		stateBuiltins[n] = true
	}
}

// trapEffects says whether trap code, run at a moment the analysis does
// not know, may change the shell's state (an assignment, a function, cd,
// a builtin that sets something, a function it calls) or files (a
// redirection to a file, a program that may write).
func (c *checker) trapEffects(code string) (state, files bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(code), "")
	if err != nil {
		return true, true
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Assign, *syntax.FuncDecl, *syntax.DeclClause, *syntax.LetClause, *syntax.ArithmCmd, *syntax.ArithmExp:
			state = true
		case *syntax.ParamExp:
			if x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) || x.Index != nil {
				state = true
			}
		case *syntax.Redirect:
			switch x.Op {
			case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
				if x.Word.Lit() != "/dev/null" {
					files = true
				}
			}
		case *syntax.CallExpr:
			if len(x.Args) == 0 {
				break
			}
			name := x.Args[0].Lit()
			_, isFunc := c.sc.funcs[name]
			switch {
			case name == "" || isFunc || c.sc.unsure[name] || stateBuiltins[name] || c.sc.lost:
				state, files = true, true
			case name == "printf" && len(x.Args) > 1 && strings.HasPrefix(x.Args[1].Lit(), "-v"):
				state = true
			case !bashBuiltins[name] && !pure[name]:
				files = true
			}
		}
		return !(state && files)
	})
	return state, files
}

// shellOptions are the set -o names whose single-letter forms set takes.
var shellOptions = map[byte]string{'a': "allexport", 'x': "xtrace", 'f': "noglob", 'e': "errexit", 'u': "nounset",
	'T': "functrace", 'E': "errtrace", 'v': "verbose", 'C': "noclobber", 'h': "hashall", 'B': "braceexpand", 'k': "keyword"}

// set applies set's options and positional parameters.
func (c *checker) set(args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.setPositional(args[i+1:])
			return
		case a == "-o" || a == "+o":
			if i+1 < len(args) {
				c.setOption(args[i+1], a == "-o")
			}
			i++
		case a == "-" || a == "+":
			c.setPositional(args[i+1:])
			return
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if hasMarks(a) {
				// Options computed at run time: any of them.
				for _, o := range shellOptions {
					c.sc.opts[o] = unsure
				}
				c.sc.allExport = unsure
				continue
			}
			for j := 1; j < len(a); j++ {
				if o, ok := shellOptions[a[j]]; ok {
					c.setOption(o, a[0] == '-')
				}
			}
		default:
			c.setPositional(args[i:])
			return
		}
	}
}

// setOption applies set -o name / +o name.
func (c *checker) setOption(name string, enable bool) {
	v := off
	if enable {
		v = on
	}
	switch name {
	case "allexport":
		c.sc.allExport = v
	}
	c.sc.opts[name] = v
}

// shopt applies shopt -s/-u for the options that change what runs.
func (c *checker) shopt(args []string) {
	set, unset, dashO := false, false, false
	var names []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "-") && len(a) > 1:
			set = set || strings.ContainsRune(a, 's')
			unset = unset || strings.ContainsRune(a, 'u')
			dashO = dashO || strings.ContainsRune(a, 'o')
		default:
			names = append(names, a)
		}
	}
	if set == unset {
		return // shopt NAME prints it
	}
	for _, n := range names {
		if hasMarks(n) {
			for _, o := range []string{"expand_aliases", "lastpipe", "xpg_echo"} {
				c.sc.opts[o] = unsure
			}
			continue
		}
		if dashO {
			c.setOption(n, set)
			continue
		}
		v := off
		if set {
			v = on
		}
		c.sc.opts[n] = v
		if n == "xpg_echo" {
			c.sc.echoEsc = v
		}
	}
}

// enable applies enable -n NAME (the builtin is off: a program of that
// name runs) and enable -f FILE NAME (a builtin loaded from a file).
func (c *checker) enable(args []string) {
	disable, load := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-f" && i+1 < len(args):
			load = true
			i++
		case strings.HasPrefix(a, "-"):
			disable = disable || strings.ContainsRune(a, 'n')
			load = load || strings.ContainsRune(a, 'f')
		case load || hasMarks(a):
			// A builtin made from a file: it is whatever the file does.
			c.sc.unsure[a] = true
		case disable:
			c.sc.disabled[a] = on
		default:
			delete(c.sc.disabled, a)
		}
	}
}

// unset applies unset [-fvn] NAME…: a variable, else a function of that
// name.
func (c *checker) unsetVars(args []string) {
	funcs, vars, nref := false, false, false
	for _, a := range args {
		switch {
		case a == "-f":
			funcs = true
		case a == "-v":
			vars = true
		case a == "-n":
			vars, nref = true, true
		case strings.HasPrefix(a, "-"):
		case hasMarks(a):
			// Which one is not known: anything may be gone.
			c.sc.havoc()
		default:
			c.nameSubscript(a)
			name, _, indexed := strings.Cut(a, "[")
			switch {
			case !funcs && strings.ContainsRune(c.sc.attrs[name], 'r'):
				// bash refuses to unset a readonly variable.
			case funcs:
				delete(c.sc.funcs, name)
				delete(c.sc.unsure, name)
			case indexed:
				if arr, ok := c.sc.arrays[name]; ok {
					arr.forget()
				}
			default:
				_, set := c.sc.vars[name]
				_, isArr := c.sc.arrays[name]
				if !vars && !set && !isArr && !c.sc.cleared[name] {
					if _, ok := c.sc.funcs[name]; ok {
						// No variable the analysis knows of; the
						// environment may hold one, which unset would
						// remove instead of the function.
						delete(c.sc.funcs, name)
						c.sc.unsure[name] = true
					}
				}
				if t, ok := c.sc.refs[name]; ok {
					if nref {
						// unset -n r removes the reference itself.
						delete(c.sc.refs, name)
					} else if t != "" {
						name = t
					}
				}
				delete(c.sc.vars, name)
				delete(c.sc.arrays, name)
				c.sc.cleared[name] = true
			}
		}
	}
}

// cd changes the working directory the analysis knows: an absolute path,
// or one relative to a directory it knows (./x, ../x; a bare name may
// be found through CDPATH, which the environment may set).
func (c *checker) cd(args []string) {
	var dir string
	have := false
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" && !have {
			continue
		}
		dir, have = a, true
		break
	}
	next := ""
	switch {
	case !have || dir == "-" || hasMarks(dir):
		c.sc.cwdLost = true
		return
	case strings.HasPrefix(dir, "/"):
		next = cleanPath(dir)
	case (dir == "." || dir == ".." || strings.HasPrefix(dir, "./") || strings.HasPrefix(dir, "../")) && !c.sc.cwdLost:
		next = cleanPath(joinPath(c.sc.cwd, dir))
	default:
		c.sc.cwdLost = true
		return
	}
	physical := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") && strings.Contains(a, "P") })
	if physical && slices.Contains(strings.Split(dir, "/"), "..") {
		// cd -P resolves the links before .., which the text does not
		// show.
		c.sc.cwdLost = true
		return
	}
	if next != c.sc.cwd || c.sc.cwdLost {
		// cd fails when the directory is not there, and the shell
		// stays where it was: either directory is where it may be.
		c.sc.cwdLost = true
	}
}

// joinPath joins dir (relative to the start, or absolute) and p.
func joinPath(dir, p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	if dir == "" {
		return p
	}
	return dir + "/" + p
}

// cleanPath cleans p, keeping a relative path relative ("" for the start
// dir).
func cleanPath(p string) string {
	c := path.Clean(p)
	if c == "." {
		return ""
	}
	return c
}

// read sets the variables read names from one line of its input. It
// knows what bash reads with the default IFS; other separators, a count
// (-n, -N), a timeout, another descriptor it does not know make the values
// unknown (still searched for JSON).
func (c *checker) read(args []string) {
	delim, raw, exact := byte('\n'), false, true
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
			switch ch {
			case 'r':
				raw = true
				continue
			case 's', 'e':
				continue
			}
			if !strings.ContainsRune("adinNptu", rune(ch)) {
				exact = false
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
				if s, ok := c.fds["/dev/fd/"+val]; ok {
					in = &reader{segs: s}
				} else if val != "0" {
					in = &reader{segs: stream{{kind: segProgram, via: "descriptor " + val}}}
				}
			case 'n', 'N', 't', 'i':
				// A count of characters, a timeout, a default: what is
				// read is not the line.
				exact = false
			}
			break
		}
	}
	line, _ := in.readLine(delim)
	if !raw {
		line = unescape(line)
	}
	ifs, ifsSet := c.sc.vars["IFS"]
	noSplit := ifsSet && ifs == ""
	if ifsSet && ifs != " \t\n" && !noSplit {
		exact = false
	}
	if !exact || hasMarks(line) {
		c.readUnknown(names, arrayName, line)
		return
	}
	words := strings.Fields(line)
	if noSplit {
		// IFS= : the line as it is, in the first variable.
		words = []string{line}
		if line == "" {
			words = nil
		}
	}
	if arrayName != "" {
		c.nameSubscript(arrayName)
		a := c.array(arrayName, false)
		clear(a.elems)
		a.next, a.lost = 0, false
		for i, w := range words {
			a.put(strconv.Itoa(i), w)
		}
		a.next = len(words)
		return
	}
	if len(names) == 0 {
		names = []string{"REPLY"}
	}
	for i, n := range names {
		c.nameSubscript(n)
		val := ""
		switch {
		case len(names) == 1 && n == "REPLY" && len(args) == 0, noSplit && i == 0:
			val = line // read with no name, or IFS=, keeps the blanks
		case len(names) == 1:
			val = strings.Trim(line, " \t")
		case i < len(words) && i == len(names)-1:
			val = strings.Join(words[i:], " ")
		case i < len(words):
			val = words[i]
		}
		c.setVar(strings.SplitN(n, "[", 2)[0], val)
	}
}

// readUnknown sets what read assigns when the analysis cannot tell how
// the line is split: each variable may hold any part of line.
func (c *checker) readUnknown(names []string, arrayName, line string) {
	v := joinValue(line, string(markExternal))
	if arrayName != "" {
		c.nameSubscript(arrayName)
		a := c.array(arrayName, false)
		clear(a.elems)
		a.next = 0
		a.put("0", v)
		a.lost = true
		return
	}
	if len(names) == 0 {
		names = []string{"REPLY"}
	}
	for _, n := range names {
		c.nameSubscript(n)
		c.setVar(strings.SplitN(n, "[", 2)[0], v)
	}
}

// mapfile fills an array with the lines of its input (mapfile -t). Other
// options (a count, lines skipped, an origin, a callback, keeping the
// newlines) leave the array unknown, its text still searched for JSON.
func (c *checker) mapfile(args []string) {
	name, delim, callback := "MAPFILE", byte('\n'), ""
	strip, exact := false, true
	in := c.in
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			name = a
			continue
		}
		for j := 1; j < len(a); j++ {
			ch := a[j]
			if ch == 't' {
				strip = true
				continue
			}
			if !strings.ContainsRune("dnOsuCc", rune(ch)) {
				continue
			}
			val := a[j+1:]
			if val == "" && i+1 < len(args) {
				i++
				val = args[i]
			}
			switch ch {
			case 'd':
				delim = 0
				if val != "" {
					delim = val[0]
				}
			case 'u':
				if s, ok := c.fds["/dev/fd/"+val]; ok {
					in = &reader{segs: s}
				} else if val != "0" {
					in = &reader{segs: stream{{kind: segProgram, via: "descriptor " + val}}}
				}
			case 'C':
				callback = val
				exact = false
			default:
				exact = false
			}
			break
		}
	}
	c.nameSubscript(name)
	arr := c.array(name, false)
	clear(arr.elems)
	arr.next, arr.lost = 0, false
	var lines []string
	for {
		line, ok := in.readLine(delim)
		if !ok || !c.b.step() {
			break
		}
		if !strip {
			// Without -t each element keeps its newline.
			line += string(delim)
		}
		lines = append(lines, line)
	}
	if !exact {
		// Lines skipped, a count, an origin: which line is which element
		// is not known, so each may be any of them.
		all := string(markExternal)
		for _, l := range lines {
			all = joinValue(all, l)
			if isJSONValue(l) {
				all = joinValue(l, string(markExternal))
				break
			}
		}
		for i := range lines {
			lines[i] = all
		}
		arr.lost = true
	}
	for i, line := range lines {
		arr.put(strconv.Itoa(i), line)
		arr.next = i + 1
		if callback != "" && i < maxIterations {
			// mapfile -C evaluates "callback index line".
			c.code(callback+" "+strconv.Itoa(i)+" "+shellQuote(line), "mapfile -C", []string{"mapfile -C"}, -1)
		}
	}
}

// declFields applies export/declare … reached through a wrapper or eval,
// where the parser saw plain words.
func (c *checker) declFields(variant string, args []string) {
	flags := ""
	for _, a := range args {
		switch {
		case hasMarks(strings.SplitN(a, "=", 2)[0]):
			// An option or a name only known when the command runs:
			// any variable may be declared, with any attribute.
			c.sc.havoc()
			return
		case strings.HasPrefix(a, "-"):
			flags += a[1:]
		case strings.HasPrefix(a, "+"):
			flags += "+" + a[1:]
		}
	}
	if !c.declares(variant, flags) {
		return
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+") {
			continue
		}
		n, v, ok := strings.Cut(a, "=")
		c.nameSubscript(n)
		base := strings.SplitN(n, "[", 2)[0]
		c.declName(variant, flags, base)
		switch {
		case strings.Contains(flags, "f") || strings.Contains(flags, "F"):
			if strings.Contains(flags, "x") || variant == "export" {
				c.sc.exportedFuncs[base] = on
			}
			continue
		case strings.Contains(flags, "n"):
			if v == "" && !ok {
				if _, ok := c.sc.refs[base]; !ok {
					c.sc.refs[base] = ""
				}
			} else if v != base {
				c.sc.refs[base] = v
			}
			continue
		case strings.HasPrefix(v, "("):
			// NAME=(…) as a word: bash parses it as an array.
			c.array(base, strings.Contains(flags, "A")).forget()
			continue
		case !ok:
			c.readonlyAfter(variant, flags, base)
			continue
		}
		c.setVar(base, v)
		c.readonlyAfter(variant, flags, base)
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
	c.arithSeen = nil
	c.arithVars(e, 1)
	c.arithAssigns(e)
}

// printf formats like printf(1), reusing the format while arguments are
// left. exact is false when the format holds a conversion the analysis
// does not redo as bash does (%q, a width or precision, %(…)T …): the text
// is then only what it may print.
func (c *checker) printf(args []string) (string, bool) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return "", true
	}
	format, rest := args[0], args[1:]
	exact := exactFormat(format, rest)
	var b strings.Builder
	for k := 0; ; k++ {
		if k == maxIterations {
			exact = false
			break
		}
		cfg := c.cfg()
		text, n, err := expand.Format(cfg, format, rest)
		c.release(cfg)
		if err != nil {
			return strings.Join(args, " "), false
		}
		b.WriteString(text)
		if n == 0 || n >= len(rest) {
			break
		}
		rest = rest[n:]
	}
	out := b.String()
	c.b.text(len(out))
	return out, exact
}

// exactFormat reports whether the analysis prints format as bash's
// printf does: literal text, the escapes both know, and %s, %d, %i, %%
// and %b (of arguments without \0 or \c) without flags, width or
// precision.
func exactFormat(format string, args []string) bool {
	if hasMarks(format) {
		return false
	}
	for i := 0; i < len(format); i++ {
		switch format[i] {
		case '\\':
			if i+1 < len(format) && strings.IndexByte(`abefnrtv\'"01234567xuU`, format[i+1]) < 0 {
				return false
			}
			i++
		case '%':
			if i+1 >= len(format) {
				return false
			}
			switch format[i+1] {
			case 's', '%':
			case 'd', 'i':
				for _, a := range args {
					if _, err := strconv.Atoi(a); err != nil && a != "" {
						return false
					}
				}
			case 'b':
				if slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, `\0`) || strings.Contains(a, `\c`) }) {
					return false
				}
			default:
				return false
			}
			i++
		}
	}
	return true
}

// arithAssigns makes the variables an arithmetic expression assigns (x=5,
// x+=1, x++) unknown: the analysis does not redo the arithmetic.
func (c *checker) arithAssigns(e syntax.ArithmExpr) {
	if e == nil {
		return
	}
	syntax.Walk(e, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			return false
		case *syntax.BinaryArithm:
			if x.Op >= syntax.Assgn && x.Op <= syntax.ShrAssgn {
				c.arithTarget(x.X)
			}
		case *syntax.UnaryArithm:
			if x.Op == syntax.Inc || x.Op == syntax.Dec {
				c.arithTarget(x.X)
			}
		}
		return true
	})
}

func (c *checker) arithTarget(e syntax.ArithmExpr) {
	w, ok := e.(*syntax.Word)
	if !ok {
		return
	}
	name := w.Lit()
	if name == "" {
		if len(w.Parts) == 1 {
			if pe, ok := w.Parts[0].(*syntax.ParamExp); ok && pe.Param != nil {
				if pe.Index != nil {
					if a, ok := c.sc.arrays[pe.Param.Value]; ok {
						a.forget()
					}
					return
				}
				name = pe.Param.Value
			}
		}
	}
	if name, _, indexed := strings.Cut(name, "["); indexed {
		if a, ok := c.sc.arrays[name]; ok {
			a.forget()
		}
		return
	}
	if isName(name) {
		c.setVar(name, string(markExternal))
	}
}

// compgen runs what it completes with: -C CMD runs CMD in a subshell with
// the command's name, the word and the word before it as arguments, -F
// FUNC calls FUNC in the shell with the same.
func (c *checker) compgen(args []string, idx int) {
	var command, function []string
	word := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				word = args[i+1]
			}
			break
		}
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			word = a
			continue
		}
		for j := 1; j < len(a); j++ {
			if !strings.ContainsRune("oAGWFCXPS", rune(a[j])) {
				continue
			}
			val := a[j+1:]
			if val == "" && i+1 < len(args) {
				i++
				val = args[i]
			}
			switch a[j] {
			case 'C':
				command = append(command, val)
			case 'F':
				function = append(function, val)
			}
			break
		}
	}
	call := " compgen " + shellQuote(word) + " ''"
	for _, cmd := range command {
		c.isolated(func() stream {
			return c.code(cmd+call, "compgen -C", []string{"compgen -C"}, idx)
		})
	}
	for _, f := range function {
		switch {
		case hasMarks(f):
			c.unreadable("compgen -F", "compgen -F calls a function whose name is only known when the command runs")
			c.sc.havoc()
		case c.sc.funcs[f] != nil:
			c.maybe(func() stream { return c.callFunc(f, []string{"compgen", word, ""}) })
		default:
			c.unreadable("compgen -F "+f, "compgen -F calls "+f+", which may be a function the analysis does not know")
		}
	}
}
