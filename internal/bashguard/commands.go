package bashguard

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// program is the command name a field runs: its base name, so that
// /usr/bin/curl is curl.
func program(f string) string {
	if i := strings.LastIndexByte(f, '/'); i >= 0 {
		return f[i+1:]
	}
	return f
}

// versioned matches the names distributions give interpreters beside
// their plain one: python3.11, perl5.36.0, ruby3.1, php8.2, nodejs.
// Compiled on first use: most sessions never analyse a command.
var versioned = lazyre.New(`^(python[23]?|pypy3?|perl|ruby|php|lua|tclsh|wish|node|Rscript|guile|ocaml|erl|awk)(?:-?[0-9][0-9.]*|js)$`)

// Canonical is the program a name stands for: a versioned interpreter
// name is its interpreter (python3.11 is python3, perl5.36.0 perl, nodejs
// node).
func Canonical(name string) string { return canonical(name) }

func canonical(name string) string {
	m := versioned().FindStringSubmatch(name)
	if m == nil {
		return name
	}
	base := m[1]
	if base == "python" {
		// python3.11 is python3; python2.7 python2.
		if v := strings.TrimLeft(strings.TrimPrefix(name, "python"), "-"); v != "" {
			return "python" + v[:1]
		}
	}
	return base
}

// runOpts carry what a wrapper passes on to the command it runs.
type runOpts struct {
	// noFunc: command/builtin run the program, not a function of that
	// name; external: a wrapper program execs it, so it is a file (no
	// builtin either).
	noFunc, external bool
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
	pending := make(map[string]bool, len(c.outProcs))
	for p := range c.outProcs {
		pending[p] = true
	}
	// bash expands the words first, then the assignments before them,
	// which hold for this command only.
	fields := c.fields(x.Args...)
	temp := c.tempVars()
	for _, a := range x.Assigns {
		if a.Name != nil {
			temp.keep(a.Name.Value)
		}
	}
	c.assign(x.Assigns, true)
	if in != nil {
		c.in = in
	}
	if c.b.err != nil {
		temp.restore()
		return nil
	}
	if len(fields) == 0 {
		// No command is left: the assignments are the shell's own.
		for name := range temp.saved {
			c.sc.exported[name] = temp.saved[name].exported
		}
		return nil
	}
	defer func() {
		name := fields[0]
		switch {
		case specialBuiltins[name] || c.sc.funcs[name] != nil || hasMarks(name) || c.sc.unsure[name] || c.sc.lost:
			// POSIX mode keeps NAME=value before a special builtin (and
			// bash's before a function in some versions); whether the
			// name is one is not always known.
			temp.join()
		default:
			temp.restore()
		}
		if _, ok := temp.saved["PATH"]; ok {
			// PATH=… before a command empties bash's table of hashed
			// paths when it is set and again when it is put back.
			clear(c.sc.hashed)
		}
	}()
	if len(fields) == 1 && fields[0] == "exec" {
		// exec without a command: its redirections stay for the rest of
		// the shell (exec < <(…), exec 3<<<…).
		c.execGen++
		for _, p := range c.stmtWrites {
			c.hold(p)
		}
		c.record(Command{Name: "exec", Args: fields, Fixed: 1})
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

// alias expands an alias: its value replaces the first word, and the
// result is read again as shell text. bash expands the aliases defined
// before it read the line, and only under shopt -s expand_aliases; an
// alias it may or may not expand makes the program unknown (run reports
// it).
func (c *checker) alias(x *syntax.CallExpr, in *reader) (stream, bool) {
	w := x.Args[0]
	name := w.Lit()
	if name == "" || c.inAlias[name] || len(w.Parts) != 1 {
		return nil, false
	}
	val, ok := c.view.aliases[name]
	if !ok || c.view.expand != on {
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
	rest := c.src[start:end]
	expanded := map[string]bool{name: true}
	for k := 0; k < 16 && (strings.HasSuffix(val, " ") || strings.HasSuffix(val, "\t")); k++ {
		// An alias whose value ends in a blank has the next word
		// checked for an alias too.
		next, after, ok := nextAliasWord(rest)
		nval, isAlias := c.view.aliases[next]
		if !ok || !isAlias || expanded[next] {
			break
		}
		expanded[next] = true
		pre += val
		val, rest = nval, after
	}
	out := c.script(pre+val+rest, []string{"alias " + name})
	delete(c.inAlias, name)
	return out, true
}

// nextAliasWord splits off the word at the start of s (after blanks)
// when it is a plain word bash could expand as an alias: letters, digits
// and the characters alias names may hold, ended by a blank, an operator
// or the end.
func nextAliasWord(s string) (word, rest string, ok bool) {
	t := strings.TrimLeft(s, " \t")
	i := 0
	for i < len(t) && !strings.ContainsRune(" \t\n;&|<>()'\"\\$`=", rune(t[i])) {
		i++
	}
	if i == 0 {
		return "", s, false
	}
	return t[:i], t[i:], true
}

// mayBeAlias says why name may be an alias bash expands on this line,
// when the analysis cannot tell.
func (c *checker) mayBeAlias(name string) string {
	v := c.view
	_, defined := v.aliases[name]
	switch {
	case c.inAlias[name]:
		return ""
	case v.unsure[name] && v.expand != off:
		return name + " may be an alias (defined on a path that may not have run)"
	case defined && v.expand == unsure:
		return name + " is an alias, and whether bash expands aliases here is not known"
	}
	return ""
}

// identity is what a command word runs, as bash finds it.
type identity struct {
	name   string
	unsure string
	// function or builtin is set when the word runs one; file when
	// unsure comes from the file the word names.
	function, builtin, file bool
}

// identify finds what prog runs: a function, a builtin, a hashed path,
// or a file found on PATH (through Options.Programs).
func (c *checker) identify(prog string, o runOpts) identity {
	slash := strings.Contains(prog, "/")
	if !o.external && !slash {
		if why := c.mayBeAlias(prog); why != "" {
			return identity{name: prog, unsure: why}
		}
	}
	// A function's name may hold a slash (/usr/bin/git(){ …; }): bash
	// looks functions up first either way.
	if !o.noFunc {
		if _, ok := c.sc.funcs[prog]; ok {
			return identity{name: prog, function: true}
		}
	}
	if !o.external && c.sc.lost {
		return identity{name: canonical(program(prog)), builtin: !slash && c.builtinRuns(prog) == on,
			unsure: "code toolhost cannot read ran before it in the same shell and may have defined " + prog + " as a function or alias, or changed PATH"}
	}
	if !o.noFunc && c.sc.unsure[prog] {
		return identity{name: canonical(prog), builtin: c.builtinRuns(prog) == on,
			unsure: prog + " may be a function, an alias, a hashed path or a loadable builtin defined on a path that may not have run"}
	}
	if !o.external && !slash {
		switch c.builtinRuns(prog) {
		case on:
			return identity{name: prog, builtin: true}
		case unsure:
			return identity{name: prog, builtin: true, unsure: "enable -n may have turned the builtin " + prog + " off, so that a program of that name runs"}
		}
	}
	word := prog
	if p, ok := c.sc.hashed[prog]; ok && !slash && !o.external {
		// bash's table of hashed paths (a program that execs the word,
		// env or xargs, searches PATH itself).
		word = p
	}
	if isProcExe(word) {
		return identity{name: "bash"} // /proc/self/exe is the shell running the command
	}
	if c.progs == nil {
		return identity{name: canonical(program(word))}
	}
	path := c.value("PATH")
	p := c.progs.Find(word, shown(path), shown(c.sc.cwd), !c.sc.cwdLost && !hasMarks(c.sc.cwd))
	id := identity{name: p.Name, unsure: p.Unsure, file: p.Unsure != ""}
	if id.name == "" {
		id.name = canonical(program(word))
	}
	if id.unsure == "" {
		id.unsure = c.envHazard()
	}
	return id
}

// envHazards are variables with which any program a command starts runs
// code the command names (a library loaded into it).
var envHazards = []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH"}

// envHazard says why a program started now may run code other than its
// own: the command set LD_PRELOAD or the like.
func (c *checker) envHazard() string {
	for _, v := range envHazards {
		if val, ok := c.sc.vars[v]; ok && val != "" {
			return v + " is set, so the program loads code the command names"
		}
	}
	return ""
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
	id := c.identify(prog, o)
	if id.function && id.unsure == "" {
		c.a.Commands[c.recordCall(prog, "", fields)].Function = true
		return c.callFunc(prog, fields[1:])
	}
	name := id.name
	idx := c.recordCall(name, id.unsure, fields)
	if id.file {
		// A file the agent may have written: it may be any program,
		// an HTTP client or a shell among them.
		if c.mayBeAnything(fields, shown(prog), id.unsure) {
			return nil
		}
	}
	if w, ok := wrappers[name]; ok {
		if name == "prlimit" {
			c.sc.filesLimited = true // --fsize
		}
		out := c.wrapper(name, w, fields, idx, o)
		if name == "exec" {
			c.leaves |= leaveShell
		}
		return out
	}
	if shells[name] {
		// The shell itself writes nothing; its script is followed.
		return c.shell(name, fields, idx)
	}
	if id.builtin {
		if out, ok := c.builtin(name, fields, idx, o); ok {
			return out
		}
	} else if !pure[name] {
		// A program may change any file the command wrote before.
		c.programMayWrite()
	}
	c.optionPrograms(name, fields)
	if httpClients[name] || name == "gh" && len(fields) > 1 && fields[1] == "api" || rawClients[name] {
		return c.client(name, fields, idx, o)
	}
	if out, ok := c.builtin(name, fields, idx, o); ok {
		return out
	}
	if runners[name] {
		return c.runner(name, fields, idx, o)
	}
	if out, ok := c.codeOptions(name, fields, idx); ok {
		return fromArguments(out, fields)
	}
	if out, ok := c.output(name, fields); ok {
		return fromArguments(out, fields)
	}
	return c.unknownProgram(name, fields, o)
}

// fromArguments makes what a modelled program prints without the guard
// redoing it derived from the command's text when an argument could hold
// JSON: git config prints a value given with -c, realpath -m a path
// given, so the text may come back out.
func fromArguments(out stream, fields []string) stream {
	if !slices.ContainsFunc(fields[1:], mayHoldJSON) {
		return out
	}
	for i, g := range out {
		if g.kind == segProgram {
			out[i] = seg{kind: segDerived, via: g.via}
		}
	}
	return out
}

// builtin runs the builtins that change the shell or run code; ok is
// false for other names.
func (c *checker) builtin(name string, fields []string, idx int, o runOpts) (stream, bool) {
	args := fields[1:]
	switch name {
	case "eval":
		c.a.Commands[idx].Shell = &ShellUse{From: "argument", Known: true}
		c.code(strings.Join(args, " "), "eval", []string{"eval"}, idx)
	case "source", ".":
		return c.source(fields, idx), true
	case "alias":
		c.defineAliases(args)
	case "unalias":
		for _, a := range args {
			if a == "-a" {
				clear(c.sc.aliases)
				continue
			}
			delete(c.sc.aliases, a)
		}
	case "hash":
		c.hash(args)
	case "trap":
		c.trap(args, idx)
	case "set":
		c.set(args)
	case "shopt":
		c.shopt(args)
	case "enable":
		c.enable(args)
	case "unset":
		c.unsetVars(args)
	case "cd", "pushd", "popd":
		if name == "cd" {
			c.cd(args)
		} else {
			c.sc.cwdLost = true
		}
	case "shift":
		n := 1
		if len(args) > 0 {
			var err error
			if n, err = strconv.Atoi(args[0]); err != nil {
				c.sc.pos = []string{unknownFields}
				return nil, true
			}
		}
		switch {
		case slices.ContainsFunc(c.sc.pos, func(p string) bool { return strings.ContainsRune(p, markSplit) }):
			c.sc.pos = []string{unknownFields}
		case n > 0 && n <= len(c.sc.pos):
			c.sc.pos = c.sc.pos[n:]
		}
	case "read":
		c.read(args)
	case "mapfile", "readarray":
		c.mapfile(args)
	case "compgen":
		c.compgen(args, idx)
	case "getopts":
		if len(args) > 1 {
			c.setVar(args[1], string(markExternal))
			c.setVar("OPTARG", string(markExternal))
			c.setVar("OPTIND", string(markExternal))
		}
	case "wait":
		for i, a := range args {
			if a == "-p" && i+1 < len(args) {
				c.setVar(args[i+1], string(markExternal))
			}
		}
	case "let":
		for _, e := range args {
			c.arithText(e, "let")
		}
	case "export", "declare", "typeset", "local", "readonly":
		c.declFields(name, args)
	case "test", "[":
		for i, a := range args {
			if (a == "-v" || a == "-R") && i+1 < len(args) {
				c.nameSubscript(args[i+1])
			}
		}
	case "printf":
		// printf -v NAME or -vNAME (bash's only option) assigns.
		target, rest, ok := "", args, false
		switch {
		case len(args) > 1 && args[0] == "-v":
			target, rest, ok = args[1], args[2:], true
		case len(args) > 0 && strings.HasPrefix(args[0], "-v") && len(args[0]) > 2:
			target, rest, ok = args[0][2:], args[1:], true
		}
		if ok {
			c.nameSubscript(target)
			text, exact := c.printf(rest)
			if !exact {
				text = joinValue(text, string(markExternal))
			}
			c.setVar(strings.SplitN(target, "[", 2)[0], text)
			return nil, true
		}
		return nil, false
	case "fc":
		// fc -s re-runs a command of the shell's history (history -s
		// adds any text to it), fc -e runs an editor then the result: code
		// the guard cannot read, run in this shell. fc -l only lists.
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") && strings.Contains(a, "l") }) {
			c.unknownCode("fc "+strings.Join(shownAll(args), " "), "fc runs commands from the shell's history, which the command may have filled with anything (history -s)",
				"run the commands directly")
			c.sc.havoc()
		}
	case "ulimit":
		// ulimit N and ulimit -f N limit the size of the files written
		// from now on (the others do not change what is written; a
		// query changes nothing).
		for _, a := range args {
			if !strings.HasPrefix(a, "-") && a != "" || strings.HasPrefix(a, "-") && strings.ContainsAny(a, "fa") {
				c.sc.filesLimited = true
			}
		}
	case "return":
		c.leaves |= leaveReturn
	case "break", "continue":
		if len(args) == 0 || args[0] == "1" {
			c.leaves |= leaveLoop
		} else {
			c.leaves |= leaveShell
		}
	case "exit", "logout":
		c.leaves |= leaveShell
	case "xargs":
		return c.xargs(fields, o), true
	case "find":
		return c.find(fields), true
	case "tee":
		return c.tee(fields), true
	default:
		return nil, false
	}
	return nil, true
}

// isProcExe reports whether p names the running process's executable
// (/proc/self/exe, /proc/$$/exe), which is the shell.
func isProcExe(p string) bool {
	return strings.HasPrefix(p, "/proc/") && strings.HasSuffix(p, "/exe")
}

// shownAll renders fields for a message.
func shownAll(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = shown(f)
	}
	return out
}

// recordCall records a command run with fields: its facts show each
// argument, one of unknown number as "…" and the rest as not fixed.
func (c *checker) recordCall(name, unsure string, fields []string) int {
	fixed := len(fields)
	for i, f := range fields {
		if strings.ContainsRune(f, markSplit) {
			fixed = i
			break
		}
	}
	args := make([]string, len(fields))
	for i, f := range fields {
		args[i] = shownArg(f)
	}
	return c.record(Command{Name: name, Unsure: unsure, Args: args, Fixed: fixed})
}

// unknownProgram handles a program the guard has no model of.
func (c *checker) unknownProgram(name string, fields []string, o runOpts) stream {
	if !pure[name] {
		if out, ok := c.laterCommand(fields, o); ok {
			return out
		}
	}
	if _, ok := c.sc.funcs["command_not_found_handle"]; ok && !bashBuiltins[name] && !strings.Contains(fields[0], "/") {
		// bash calls the handler with the command line when the program
		// does not exist; the guard cannot tell whether it does.
		c.maybe(func() stream { return c.callFunc("command_not_found_handle", fields) })
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
		// A file operand the command fed (<(…)) or wrote: the program
		// may print what it reads there.
		if s, ok := c.fds[fdPath(f)]; ok {
			derived = derived || s.mayHoldJSON()
		} else if w, ok := c.written(f); ok {
			derived = derived || mayHoldJSON(w.text)
		}
	}
	derived = derived || buildsJSON(name, fields[1:], in)
	if derived {
		return stream{{kind: segDerived, via: "the output of " + name}}
	}
	return stream{{kind: segProgram, via: "the output of " + name}}
}

// codePrograms are the programs whose output is made by code in their
// arguments (sed, awk, interpreters).
var codePrograms = map[string]bool{"sed": true, "gsed": true, "awk": true, "gawk": true, "mawk": true, "nawk": true,
	"perl": true, "python": true, "python2": true, "python3": true, "ruby": true, "node": true, "php": true, "lua": true}

// charFromNumber are the ways code spells a character by its number
// (printf "%c", 123; chr(123); "\x7b").
var charFromNumber = []string{"%c", "chr(", "fromCharCode", "pack(", `\x7b`, `\x7B`, `\173`, `\u007b`, `\u007B`}

// buildsJSON reports whether a program that runs code from its
// arguments may assemble JSON from the command's text: a bracket in the
// code's strings (awk's printf "{" …, sed's s/.*/{&}/ around text that
// has quotes), or a character made from its number.
func buildsJSON(name string, args []string, in stream) bool {
	if !codePrograms[name] {
		return false
	}
	code := strings.Join(args, "\n")
	for _, s := range charFromNumber {
		if strings.Contains(code, s) {
			return true
		}
	}
	if name == "sed" || name == "gsed" {
		text, _ := in.text()
		return strings.ContainsAny(code, "{}[]") && strings.ContainsAny(text+code, `"`)
	}
	return slices.ContainsFunc(quotedStrings(code), func(s string) bool { return strings.ContainsAny(s, "{}[]") })
}

// pure are programs known not to run a command named in their arguments
// and not to write files other than those their output goes to (what
// they print is modelled, or not known).
var pure = map[string]bool{}

func init() {
	// Not sort (-o), uniq and xxd (an output operand), sed (-i, w), awk
	// (print > file), less (-o), file (-C): they write files.
	for _, n := range strings.Fields(`echo printf cat tac head tail cut tr fold nl pv grep egrep fgrep rg jq gojq jaq
		base64 basenc rev sha1sum sha224sum sha256sum sha384sum sha512sum md5sum b2sum cksum sum shasum wc which whereis
		type readlink realpath basename dirname true false : test [ sleep ls pwd id whoami date printenv stat du df
		uname hostname env seq expr yes nproc tty locale getconf diff cmp comm column numfmt od hexdump strings more
		cd kill`) {
		pure[n] = true
	}
}

// optionPrograms records the programs a program the analysis models runs
// because of an option or a variable: sort --compress-program=PROG runs
// PROG (and PROG -d) for its temporary files; less runs LESSOPEN and
// LESSCLOSE as shell commands.
func (c *checker) optionPrograms(name string, fields []string) {
	switch name {
	case "sort":
		for i := 1; i < len(fields); i++ {
			opt, val, has := strings.Cut(fields[i], "=")
			// GNU options may be shortened to a prefix that is still
			// unique: --co is --compress-program.
			if len(opt) < 4 || !strings.HasPrefix("--compress-program", opt) {
				continue
			}
			if !has && i+1 < len(fields) {
				i++
				val = fields[i]
			}
			c.withVia([]string{"sort --compress-program"}, func() {
				c.maybe(func() stream {
					c.run([]string{val}, runOpts{noFunc: true, external: true})
					return c.run([]string{val, "-d"}, runOpts{noFunc: true, external: true})
				})
			})
		}
	case "less":
		for _, v := range []string{"LESSOPEN", "LESSCLOSE"} {
			if val, ok := c.sc.vars[v]; ok && val != "" {
				c.unknownCode(v+"="+shown(val), "less runs $"+v+" as a shell command for each file it shows",
					"run the preprocessing command directly")
			}
		}
	}
}

// watched are programs whose identity policy rules commonly ask about: a
// program the analysis has no model of that names one of them later in
// its arguments may run it (fakeroot git push …, docker exec ctr rm …).
var watched = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`git rm rmdir mv cp dd chmod chown shred truncate ln docker podman kubectl helm terraform
		npm npx pnpm yarn node deno bun python python2 python3 pip pip3 uv pipx perl ruby php go cargo make ssh scp sftp rsync
		gh aws gcloud az sudo su doas kill pkill killall systemctl mount umount nc ncat netcat socat telnet wget curl xh http
		https bash sh zsh dash env xargs find tee crontab apt apt-get dnf yum apk brew psql mysql sqlite3 redis-cli openssl`) {
		watched[n] = true
	}
}

// IsKnownProgram reports whether name is one of KnownPrograms.
func IsKnownProgram(name string) bool {
	_, ok := slices.BinarySearch(knownPrograms(), name)
	return ok
}

// KnownPrograms are the names of the programs the analysis has a model of
// or that rules commonly ask about: a file that is one of them (a link or
// a copy under another name) should be named so (Programs.Find).
func KnownPrograms() []string { return slices.Clone(knownPrograms()) }

var knownPrograms = sync.OnceValue(func() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] && !bashBuiltins[n] || n == "echo" || n == "printf" || n == "test" || n == "[" || n == "true" || n == "false" || n == "kill" {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	for _, m := range []map[string]bool{httpClients, rawClients, shells, runners, pure, watched} {
		for n := range m {
			add(n)
		}
	}
	for n := range wrappers {
		add(n)
	}
	for _, n := range strings.Fields(`python2 python3 perl ruby php node lua tclsh awk gawk mawk sed git gh tar rsync scp sftp make
		vim vi nvim busybox jq xxd base64`) {
		add(n)
	}
	slices.Sort(out)
	return out
})
