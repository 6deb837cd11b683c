package bashguard

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

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
	// noFunc: the wrapped name is a program or builtin, not a shell
	// function (command, builtin); external: the wrapper is a program that
	// execs the wrapped one, so it is a file found on PATH, never a
	// builtin or function.
	noFunc, external bool
	// optional are long options whose value is only given after =
	// (env --ignore-signal[=SIG]): the next field is not theirs.
	optional []string
	// clears are options with which the wrapped command gets an empty
	// environment (env -i) or loses a variable (env -u NAME);
	// defaultPath the ones with which it is looked up on the system's
	// default PATH (command -p).
	clears, unsets, defaultPath []string
}

var wrappers = map[string]wrapper{
	"timeout": {short: "sk", long: []string{"signal", "kill-after"}, positional: 1, noFunc: true, external: true},
	"env": {short: "uCSPa", long: []string{"unset", "chdir", "split-string", "argv0"}, optional: []string{"block-signal", "default-signal", "ignore-signal"}, assigns: true,
		script: []string{"-S", "--split-string"}, noFunc: true, external: true, clears: []string{"-i", "--ignore-environment", "-"}, unsets: []string{"-u", "--unset"}},
	"nice":             {short: "n", long: []string{"adjustment"}, noFunc: true, external: true},
	"nohup":            {noFunc: true, external: true},
	"command":          {noRun: []string{"-v", "-V"}, noFunc: true},
	"builtin":          {noFunc: true},
	"exec":             {short: "a", noFunc: true, external: true, clears: []string{"-c"}},
	"time":             {short: "fo", long: []string{"format", "output"}},
	"sudo":             {short: "ugCDhprtUT", long: []string{"user", "group", "close-from", "chdir", "host", "prompt", "role", "type", "other-user", "command-timeout"}, assigns: true, noRun: []string{"-l", "--list", "-v", "--validate", "-k", "-K", "-e", "--edit"}, noFunc: true, external: true},
	"doas":             {short: "uC", noFunc: true, external: true},
	"stdbuf":           {short: "ioe", long: []string{"input", "output", "error"}, noFunc: true, external: true},
	"setsid":           {noFunc: true, external: true},
	"ionice":           {short: "cnp", long: []string{"class", "classdata", "pid"}, noFunc: true, external: true},
	"chronic":          {noFunc: true, external: true},
	"unbuffer":         {noFunc: true, external: true},
	"busybox":          {noFunc: true, external: true},
	"nsenter":          {short: "tSGmuinpUCr", long: []string{"target", "setuid", "setgid"}, noFunc: true, external: true},
	"chrt":             {positional: 1, noFunc: true, external: true},
	"taskset":          {positional: 1, noFunc: true, external: true},
	"prlimit":          {noFunc: true, external: true},
	"unshare":          {noFunc: true, external: true},
	"strace":           {short: "eoOpPsSuXaIbE", noFunc: true, external: true},
	"ltrace":           {short: "eoOpPsSuXaIbE", noFunc: true, external: true},
	"catchsegv":        {noFunc: true, external: true},
	"chroot":           {positional: 1, long: []string{"userspec", "groups"}, noFunc: true, external: true},
	"fakeroot":         {short: "sil", noFunc: true, external: true},
	"faketime":         {positional: 1, short: "p", noFunc: true, external: true},
	"xvfb-run":         {short: "nsfpe", noFunc: true, external: true},
	"dbus-run-session": {noFunc: true, external: true},
	"setpriv":          {noFunc: true, external: true},
	"numactl":          {noFunc: true, external: true},
	"firejail":         {noFunc: true, external: true},
	"systemd-run":      {short: "pEuM", noFunc: true, external: true},
	"pkexec":           {long: []string{"user"}, noFunc: true, external: true},
	"proot":            {short: "rbwv", noFunc: true, external: true},
	"torsocks":         {noFunc: true, external: true},
	"proxychains":      {short: "f", noFunc: true, external: true},
	"proxychains4":     {short: "f", noFunc: true, external: true},
	"caffeinate":       {noFunc: true, external: true},
	"flatpak-spawn":    {noFunc: true, external: true},
}

// wrapper runs the command a wrapper wraps.
func (c *checker) wrapper(name string, w wrapper, fields []string, idx int, o runOpts) stream {
	args := slices.Clone(fields)
	pos := w.positional
	temp := c.tempVars()
	defer temp.restore()
	for i := 1; i < len(args); i++ {
		f := args[i]
		switch {
		case slices.Contains(w.clears, f):
			// An empty environment: no PATH (the default search), no
			// exported variable.
			temp.set("PATH", string(markExternal))
			continue
		case f == "--":
			if i+1 < len(args) && pos == 0 {
				return c.wrapped(name, args, i+1, w, o)
			}
			continue
		case strings.HasPrefix(f, "--"):
			given, _, hasVal := strings.Cut(f, "=")
			opt := w.longName(given)
			if slices.Contains(w.noRun, opt) {
				return nil
			}
			if slices.Contains(w.script, opt) {
				val, at := f[min(len(given)+1, len(f)):], i
				if !hasVal && i+1 < len(args) {
					val, at = args[i+1], i+1
				}
				args = splice(args, i, at, c.splitString(val))
				i--
				continue
			}
			if !hasVal && slices.Contains(w.long, opt[2:]) {
				// The option's value is the next field.
				if slices.Contains(w.unsets, opt) && i+1 < len(args) {
					temp.clear(args[i+1])
				}
				i++
			} else if hasVal && slices.Contains(w.unsets, opt) {
				temp.clear(f[len(given)+1:])
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
				if slices.Contains(w.clears, "-"+string(ch)) {
					temp.set("PATH", string(markExternal))
				}
				if slices.Contains(w.defaultPath, "-"+string(ch)) {
					temp.set("PATH", "/bin:/usr/bin")
				}
				if !strings.ContainsRune(w.short, rune(ch)) {
					continue
				}
				val, at := f[j+1:], i
				if val == "" && i+1 < len(args) {
					val, at = args[i+1], i+1
				}
				switch {
				case slices.Contains(w.script, "-"+string(ch)):
					keep := f[:j]
					repl := c.splitString(val)
					if keep != "-" {
						repl = append([]string{keep}, repl...)
					}
					args = splice(args, i, at, repl)
					i--
				case slices.Contains(w.unsets, "-"+string(ch)):
					temp.clear(val)
					i = at
				case ch == 'o' && (name == "strace" || name == "ltrace") && (strings.HasPrefix(val, "|") || strings.HasPrefix(val, "!")):
					// strace -o '|cmd' pipes the trace into a shell command.
					c.withVia([]string{name + " -o"}, func() {
						c.isolated(func() stream { return c.code(val[1:], name+" -o", []string{name + " -o"}, -1) })
					})
					i = at
				default:
					i = at
				}
				break
			}
			continue
		case w.assigns && envAssign(name, f):
			// NAME=VALUE: in the wrapped command's environment only.
			n, v, _ := strings.Cut(f, "=")
			temp.set(n, v)
			c.sc.exported[n] = on
			continue
		case pos > 0:
			pos--
			continue
		}
		return c.wrapped(name, args, i, w, o)
	}
	if name == "env" {
		// No command: env prints the environment it would give one.
		return c.environment("env")
	}
	return nil
}

// longName is the long option opt abbreviates: getopt_long takes any
// prefix of one option (env --ign is --ignore-signal, --sp=… is
// --split-string=…). An ambiguous or unknown one is left as it is.
func (w wrapper) longName(opt string) string {
	var names []string
	for _, list := range [][]string{w.noRun, w.script, w.clears, w.unsets, w.defaultPath} {
		for _, n := range list {
			if strings.HasPrefix(n, "--") {
				names = append(names, n)
			}
		}
	}
	for _, n := range slices.Concat(w.long, w.optional) {
		names = append(names, "--"+n)
	}
	var match string
	for _, n := range names {
		switch {
		case n == opt:
			return opt
		case strings.HasPrefix(n, opt) && len(opt) > 2:
			if match != "" && match != n {
				return opt
			}
			match = n
		}
	}
	if match == "" {
		return opt
	}
	return match
}

// envAssign reports whether f is a NAME=VALUE a wrapper puts in the
// wrapped command's environment: env takes any name (BASH_FUNC_f%% too),
// sudo only shell names.
func envAssign(wrapper, f string) bool {
	name, _, ok := strings.Cut(f, "=")
	if wrapper == "env" {
		return ok && name != ""
	}
	return ok && isName(name)
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
		out = c.run(args[at:], runOpts{noFunc: w.noFunc, external: w.external, line: line, off: off})
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
	if envEscapes(s) {
		// env's escapes are not the shell's: \_ is a space that
		// separates arguments, \c ends the string, \t, \n … are
		// characters, \\ and \' also inside single quotes.
		c.unknownCode(s, "env -S reads backslash escapes the shell does not (\\_ separates arguments)", "write the command and its arguments directly instead of env -S")
		return nil
	}
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
		out = append(out, a.Name.Value+"="+c.literal(a.Value))
	}
	return append(out, c.fields(call.Args...)...)
}

// envEscapes reports whether env -S would read a backslash in s
// otherwise than the shell: any but \" \\ \$ \# outside single quotes.
func envEscapes(s string) bool {
	if !strings.ContainsRune(s, '\\') {
		return false
	}
	if strings.ContainsRune(s, '\'') {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if i+1 == len(s) || !strings.ContainsRune(`"\$#`, rune(s[i+1])) {
				return true
			}
			i++
		}
	}
	return false
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// tempVars are variables set for one command only (NAME=value cmd, env
// NAME=value cmd), restored when it is done.
type tempVars struct {
	c     *checker
	saved map[string]binding
}

func (c *checker) tempVars() *tempVars { return &tempVars{c: c, saved: map[string]binding{}} }

func (t *tempVars) keep(name string) {
	if _, ok := t.saved[name]; !ok {
		t.saved[name] = t.c.sc.bindingOf(name)
	}
}

func (t *tempVars) set(name, val string) {
	t.keep(name)
	t.c.sc.vars[name] = val
	delete(t.c.sc.cleared, name)
	t.c.hook(name, val)
}

func (t *tempVars) clear(name string) {
	t.keep(name)
	delete(t.c.sc.vars, name)
	t.c.sc.cleared[name] = true
}

// restore puts the variables back as they were.
func (t *tempVars) restore() {
	for name, b := range t.saved {
		t.c.sc.restoreBinding(name, b)
	}
}

// join leaves each variable either as it was or as the command set it:
// what a special builtin or a function does with NAME=value before it
// depends on the shell's mode.
func (t *tempVars) join() {
	for name, b := range t.saved {
		now := t.c.sc.value(name)
		t.c.sc.restoreBinding(name, b)
		if was := t.c.sc.value(name); was != now {
			t.c.sc.vars[name] = joinValue(was, now)
			delete(t.c.sc.cleared, name)
		}
	}
}

// xargs runs its command with the items of its input as arguments.
func (c *checker) xargs(fields []string, o runOpts) stream {
	var replace, delim, eof string
	null, perLine := false, false
	maxArgs := 0
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
			case "--eof":
				eof = val
			case "--max-args":
				if maxArgs, _ = strconv.Atoi(val); maxArgs <= 0 {
					perLine = true
				}
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
				case 'E':
					eof = val
				case 'L':
					perLine = true
				case 'n':
					if maxArgs, _ = strconv.Atoi(val); maxArgs <= 0 {
						perLine = true
					}
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
			case 'e':
				// -e[EOF]: input ends at a line holding EOF.
				eof = a[j+1:]
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
	items, exact := xargsItems(in, null, delim, replace != "" || perLine, replace != "")
	if eof != "" {
		// xargs stops reading at the item EOF (not under -0 or -d).
		if at := slices.Index(items, eof); exact && !null && delim == "" {
			if at >= 0 {
				items = items[:at]
			}
		} else {
			items = []string{unknownFields}
		}
	}
	saved := c.in
	c.in = &reader{} // GNU xargs gives the command /dev/null as stdin
	defer func() { c.in = saved }()
	var out stream
	ext := runOpts{noFunc: true, external: true}
	c.withVia([]string{"xargs"}, func() {
		if replace == "" {
			groups := [][]string{items}
			switch {
			case perLine && len(items) > 0:
				// -L: a run per group of lines, which the analysis does
				// not keep apart: how many items each run gets is not
				// known.
				groups = [][]string{{unknownFields}}
			case maxArgs > 0 && exact:
				groups = nil
				for len(items) > 0 && len(groups) < maxIterations {
					n := min(maxArgs, len(items))
					groups, items = append(groups, items[:n]), items[n:]
				}
				if len(items) > 0 {
					groups = append(groups, []string{unknownFields})
				}
			case maxArgs > 0:
				groups = [][]string{{unknownFields}}
			}
			for _, g := range groups {
				line := append(slices.Clone(cmd), g...)
				ext.line = line
				out = c.cat(out, c.run(line, ext))
			}
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
			ext.line = line
			out = c.cat(out, c.run(line, ext))
		}
	})
	return out
}

// xargsItems splits xargs' input into items: at NULs (-0), at a delimiter
// (-d), at newlines (-I, -L), else at blanks with quotes and backslashes
// as xargs reads them. Input the guard does not know is items of unknown
// number; exact is false then.
func xargsItems(in stream, null bool, delim string, lines, whole bool) ([]string, bool) {
	var items []string
	exact := true
	for _, g := range in {
		if g.kind != segText || g.json || g.inexact {
			v := g.value()
			if g.kind == segText && !g.json {
				// Inexact text: what it may hold, of unknown number.
				v = joinValue(g.text, string(markExternal))
			}
			items = append(items, v+string(markSplit))
			exact = false
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
					items = append(items, xargsUnquote(l, !whole)...)
				}
			}
		default:
			items = append(items, xargsUnquote(t, true)...)
		}
	}
	return items, exact
}

func nonEmpty(s []string) []string {
	return slices.DeleteFunc(s, func(x string) bool { return x == "" })
}

// xargsUnquote splits text at blanks outside quotes, removing quotes and
// backslashes, as xargs does without -0/-d; under -I (blanks false)
// only a newline ends an item.
func xargsUnquote(t string, blanks bool) []string {
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
		case (ch == ' ' || ch == '\t') && blanks || ch == '\n':
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
		// The command ends at ; or at a + right after {} (a + elsewhere
		// is an argument).
		j := i + 1
		for j < len(fields) && fields[j] != ";" && (fields[j] != "+" || j == i+1 || fields[j-1] != "{}") {
			j++
		}
		cmd := make([]string, 0, j-i-1)
		for _, a := range fields[i+1 : j] {
			if strings.Contains(a, "{}") {
				// A file name from disk (several, with +).
				a = strings.ReplaceAll(a, "{}", string(markExternal))
				if j < len(fields) && fields[j] == "+" {
					a += string(markSplit)
				}
			}
			cmd = append(cmd, a)
		}
		if len(cmd) > 0 {
			c.withVia([]string{"find " + fields[i]}, func() {
				// find runs the command once per file, or not at all.
				out = c.cat(out, c.maybe(func() stream {
					return c.run(cmd, runOpts{noFunc: true, external: true, line: fields, off: i + 1})
				}))
			})
		}
		i = j
	}
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
			c.withVia(via, func() { out = c.run(args, runOpts{noFunc: true, external: true}) })
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

// laterCommand handles a program the guard has no model of whose later
// arguments start a program the analysis knows (strace curl …, docker
// exec ctr git push …, fakeroot-like wrappers it does not list): that is
// where the command it may run starts. An HTTP client, a shell with a
// script, or eval always count; a program whose identity matters to rules
// counts too, as a command that may run.
func (c *checker) laterCommand(fields []string, o runOpts) (stream, bool) {
	for i := 1; i < len(fields); i++ {
		if hasMarks(fields[i]) || strings.HasPrefix(fields[i], "-") {
			continue
		}
		n := canonical(program(fields[i]))
		guardRelevant := httpClients[n] || rawClients[n] || n == "gh" && i+1 < len(fields) && fields[i+1] == "api" || n == "eval" || shells[n] && len(fields) > i+1
		if !guardRelevant && !(watched[n] && i+1 < len(fields)) {
			continue
		}
		var out stream
		c.withVia([]string{program(fields[0])}, func() {
			run := func() stream {
				return c.run(fields[i:], runOpts{noFunc: true, external: true, line: o.line, off: o.off + i})
			}
			if guardRelevant {
				out = run()
			} else {
				out = c.maybe(run)
			}
		})
		return out, true
	}
	// A command line inside one argument: a program that runs it through
	// a shell (zip -TT 'cmd', man -P 'cmd', make SHELL=cmd, dpkg
	// --post-invoke=cmd, strace -o '|cmd', gdb -ex '!cmd', sqlite3
	// '.shell cmd'): it may run, in a process of its own.
	for i := 1; i < len(fields) && !bashBuiltins[fields[0]]; i++ {
		src, ok := embeddedCommand(fields[i])
		if !ok {
			continue
		}
		var out stream
		c.withVia([]string{program(fields[0])}, func() {
			out = c.maybe(func() stream {
				// The program may add words of its own (zip -TT adds the
				// archive's name).
				return c.isolated(func() stream {
					return c.code(src+" "+unknownFields, program(fields[0])+" "+shown(fields[i]), []string{program(fields[0])}, -1)
				})
			})
		})
		return out, true
	}
	return nil, false
}

// embeddedCommand finds a command line in an argument: after NAME= or
// --option=, and after the marks programs put before a shell command
// (!, |, +!, .shell, .system, \!, system), text whose first word is a
// program the rules or the guard watch, followed by more.
func embeddedCommand(f string) (string, bool) {
	if hasMarks(f) {
		return "", false
	}
	s := f
	if k, v, ok := strings.Cut(s, "="); ok && (strings.HasPrefix(k, "-") || isName(k)) {
		s = v
	}
	s = strings.TrimLeft(s, "!|+ \t")
	for _, p := range []string{".shell ", ".system ", "\\! ", "system ", "shell "} {
		s = strings.TrimPrefix(s, p)
	}
	s = strings.TrimLeft(s, "!| \t")
	words := strings.Fields(s)
	if len(words) == 0 || s == f && len(words) < 2 {
		// A bare word is a later argument laterCommand already weighed.
		return "", false
	}
	n := canonical(program(words[0]))
	if httpClients[n] || rawClients[n] || watched[n] || shells[n] {
		return s, true
	}
	return "", false
}
