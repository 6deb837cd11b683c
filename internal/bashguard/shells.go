package bashguard

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

var shells = map[string]bool{"bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "rbash": true, "yash": true, "posh": true, "lksh": true}

// invocation is how a shell was started.
type invocation struct {
	c, s, interactive, login, norc, noprofile, posix bool
	rcfile                                           string
	rcSet                                            bool
	opts                                             map[string]tri
	positional                                       []string
}

// parseShell reads a shell's options.
func parseShell(fields []string) invocation {
	var v invocation
	v.opts = map[string]tri{}
	for i := 1; i < len(fields); i++ {
		a := fields[i]
		switch {
		case a == "--" || a == "-":
			v.positional = append(v.positional, fields[i+1:]...)
			return v
		case a == "--rcfile" || a == "--init-file":
			if i+1 < len(fields) {
				v.rcfile, v.rcSet = fields[i+1], true
			}
			i++
		case a == "-o" || a == "+o":
			if i+1 < len(fields) && fields[i+1] == "posix" {
				v.posix = a == "-o"
			}
			i++
		case a == "-O" || a == "+O":
			if i+1 < len(fields) {
				v.opts[fields[i+1]] = map[bool]tri{true: on, false: off}[a == "-O"]
			}
			i++
		case a == "--login":
			v.login = true
		case a == "--norc":
			v.norc = true
		case a == "--noprofile":
			v.noprofile = true
		case a == "--posix":
			v.posix = true
		case strings.HasPrefix(a, "--"):
		case (strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+")) && len(a) > 1:
			flags := a[1:]
			v.c = v.c || strings.ContainsRune(flags, 'c')
			v.s = v.s || strings.ContainsRune(flags, 's')
			if a[0] == '-' {
				v.interactive = v.interactive || strings.ContainsRune(flags, 'i')
				v.login = v.login || strings.ContainsRune(flags, 'l')
			}
			if strings.ContainsAny(flags, "oO") {
				i++ // -eo pipefail
			}
		default:
			v.positional = append(v.positional, fields[i:]...)
			return v
		}
	}
	return v
}

// shell runs a shell invocation: the start-up files it reads, then the -c
// string, the script it reads from its standard input, or a script file.
func (c *checker) shell(name string, fields []string, idx int) stream {
	v := parseShell(fields)
	if strings.HasPrefix(fields[0], "-") {
		v.login = true
	}
	saved, leaves := c.sc, c.leaves
	defer func() { c.sc, c.leaves = saved, leaves }()
	c.sc = saved.child(name)
	c.leaves = 0
	for o, t := range v.opts {
		c.sc.opts[o] = t
	}
	if v.posix {
		c.sc.opts["posix"] = on
	}
	c.importFunctions()
	out := c.startup(name, v, idx)
	switch {
	case v.c:
		if len(v.positional) == 0 {
			return out // bash: -c: option requires an argument
		}
		if len(v.positional) > 1 {
			c.sc.arg0 = v.positional[1]
		}
		if len(v.positional) > 2 {
			c.sc.pos = slices.Clone(v.positional[2:])
		}
		c.a.Commands[idx].Shell = &ShellUse{From: "argument", Known: true}
		out = c.cat(out, c.code(v.positional[0], name+" -c", []string{name + " -c"}, idx))
	case v.s || len(v.positional) == 0:
		c.sc.pos = slices.Clone(v.positional)
		c.a.Commands[idx].Shell = &ShellUse{From: "stdin", Known: true}
		out = c.cat(out, c.codeStream(c.in.readAll(), name, idx))
	default:
		c.sc.arg0, c.sc.pos = v.positional[0], slices.Clone(v.positional[1:])
		out = c.cat(out, c.scriptFile(v.positional[0], name, idx))
	}
	c.finishTraps()
	return out
}

// importFunctions defines in a child bash the functions its environment
// passes as BASH_FUNC_name%%=() { …; } (export -f, or env setting one).
func (c *checker) importFunctions() {
	for k, v := range c.sc.vars {
		name, ok := strings.CutPrefix(k, "BASH_FUNC_")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, "%%")
		delete(c.sc.vars, k)
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(name+" "+v), "")
		if err != nil || hasMarks(v) || len(f.Stmts) != 1 {
			c.sc.unsure[name] = true
			continue
		}
		if fd, ok := f.Stmts[0].Cmd.(*syntax.FuncDecl); ok {
			c.define(fd)
		} else {
			c.sc.unsure[name] = true
		}
	}
}

// startup runs the start-up files a shell reads before its commands:
// a login shell's profiles, an interactive shell's rc file (--rcfile,
// ~/.bashrc, $ENV), a non-interactive bash's $BASH_ENV.
func (c *checker) startup(name string, v invocation, idx int) stream {
	bashLike := name == "bash" || name == "rbash"
	posixLike := !bashLike || c.sc.opt("posix") == on
	var files []string
	switch name {
	case "bash", "rbash", "sh", "dash", "ash", "ksh", "mksh", "lksh", "posh", "yash":
	default:
		// zsh reads ~/.zshenv (and more) whatever it is asked to do.
		c.unreadable(name, name+" reads start-up files (~/.zshenv …) that toolhost cannot see, so what it runs is not known")
		c.sc.havoc()
		return nil
	}
	if v.login && !v.noprofile {
		c.unreadable(name+" -l", name+" -l reads the login profiles (/etc/profile, ~/.profile …) that toolhost cannot see, so what it runs is not known")
		c.sc.havoc() // they may change PATH, define functions and aliases
	}
	switch {
	case v.interactive && bashLike && !posixLike && !v.norc:
		if v.rcSet {
			files = append(files, v.rcfile)
		} else {
			c.unreadable(name+" -i", name+" -i reads ~/.bashrc, which toolhost cannot see, so what it runs is not known")
			c.sc.havoc()
		}
	case v.interactive && posixLike:
		if env, ok := c.sc.vars["ENV"]; ok {
			files = append(files, env)
		}
	case !v.interactive && bashLike && !posixLike:
		if env, ok := c.sc.vars["BASH_ENV"]; ok && env != "" {
			files = append(files, env)
		}
	}
	var out stream
	for _, f := range files {
		out = c.cat(out, c.startupFile(name, f, idx))
	}
	return out
}

// startupFile runs one start-up file: one the command wrote or fed (a
// process substitution) is read as the script it is; one on disk the
// analysis cannot read, and one named at run time may be one the command
// wrote, which the guard refuses.
func (c *checker) startupFile(shell, path string, idx int) stream {
	what := shell + " start-up file " + shown(path)
	switch {
	case hasMarks(path):
		if c.wroteUnknown {
			c.unknownCode(what, shell+" reads a start-up file named at run time, which may be one the command wrote",
				"run the commands directly instead of through a start-up file (BASH_ENV, ENV, --rcfile)")
		} else {
			c.unreadable(what, shell+" reads a start-up file named at run time, so what it runs is not known")
		}
		c.sc.havoc()
		return nil
	}
	if s, ok := c.fds[fdPath(path)]; ok {
		return c.codeStream(s, shell+" --rcfile", idx)
	}
	if f, ok := c.written(path); ok {
		out := c.code(f.text, shell+" start-up file", []string{shell + " start-up file " + path}, idx)
		if !f.sure {
			c.unreadable(what, "the start-up file "+path+" may hold something else than what the command wrote to it")
			c.sc.havoc()
		}
		return out
	}
	c.unreadable(what, shell+" reads the start-up file "+path+", which toolhost cannot see, so what it runs is not known")
	c.sc.havoc()
	return nil
}

// scriptFile runs the script a shell or source reads from path.
func (c *checker) scriptFile(path, via string, idx int) stream {
	if f, ok := c.written(path); ok {
		c.a.Commands[idx].Shell = &ShellUse{From: "file", Known: f.sure}
		out := c.code(f.text, via, []string{via + " " + path}, idx)
		if !f.sure {
			c.unreadable(via+" "+path, "the script "+path+" may hold something else than what the command wrote to it")
			if via == "source" || via == "." {
				c.sc.havoc()
			}
		}
		return out
	}
	s := c.open(path)
	if len(s) == 1 && s[0].kind == segFile {
		// A script on disk is not part of the command; the guard does
		// not read files.
		c.a.Commands[idx].Shell = &ShellUse{From: "file", Known: false}
		if hasMarks(path) && c.wroteUnknown {
			c.unknownCode(via+" "+shown(path), via+" runs a script named at run time, which may be one the command wrote",
				"run the commands directly, or name the script literally")
		} else {
			c.unreadable(via+" "+shown(path), "the script "+shown(path)+" is a file on disk, which toolhost does not read")
		}
		if via == "source" || via == "." {
			c.sc.havoc()
		}
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
		case g.kind == segText && !g.json && !g.inexact:
			out = c.cat(out, c.code(g.text, via, []string{via + " < " + g.via}, idx))
		case g.kind == segText && !g.json:
			// Text that may be printed, or only part of it: what runs is
			// not known; what it may run is still searched.
			if idx >= 0 && c.a.Commands[idx].Shell != nil {
				c.a.Commands[idx].Shell.Known = false
			}
			c.unknownCode(via+" < "+g.via, via+" reads its program from "+g.via+", which the guard cannot read exactly",
				"save the script to a file and run the file (bash script.sh), or write its commands directly")
			c.hypothesis(func() { c.code(g.text, via, []string{via + " < " + g.via}, idx) })
		case g.via == inheritedStdin:
			if idx >= 0 && c.a.Commands[idx].Shell != nil {
				c.a.Commands[idx].Shell.Known = false
			}
			c.unreadable(via+" < "+g.via, via+" reads its program from "+g.via+", which toolhost does not see")
		case g.kind == segFile:
			// A script file on disk: not part of the command, and the
			// guard does not read files, so it does not know the code
			// (as for bash script.sh).
			if idx >= 0 && c.a.Commands[idx].Shell != nil {
				c.a.Commands[idx].Shell.Known = false
			}
			c.unreadable(via+" < "+g.via, via+" reads its program from "+g.via+", which toolhost does not read")
		default:
			if idx >= 0 && c.a.Commands[idx].Shell != nil {
				c.a.Commands[idx].Shell.Known = false
			}
			c.unknownCode(via+" < "+g.via, via+" reads its program from "+g.via+", which the guard cannot read",
				"save the script to a file and run the file (bash script.sh), or write its commands directly")
		}
	}
	return out
}

// code runs shell code given as text. Code that holds text the guard
// could not follow, or that is wholly computed at run time, cannot be
// read and is refused. A value from the environment inside otherwise
// known code is read as a word for the guard; bash parses it as code, so
// what runs there is not known.
func (c *checker) code(src, what string, via []string, idx int) stream {
	if strings.ContainsRune(src, markDerived) || strings.ContainsRune(src, markJSON) ||
		strings.Trim(src, " \t\n"+string(markExternal)+string(markSplit)) == "" && hasMarks(src) {
		if idx >= 0 && c.a.Commands[idx].Shell != nil {
			c.a.Commands[idx].Shell.Known = false
		}
		c.unknownCode(src, what+" runs code built at run time ("+shown(src)+")",
			"write the commands directly instead of building them in a variable or a command's output and running them through "+what)
		if what == "eval" || what == "source" || what == "." {
			c.sc.havoc()
		}
		return nil
	}
	if hasMarks(src) {
		if idx >= 0 && c.a.Commands[idx].Shell != nil {
			c.a.Commands[idx].Shell.Known = false
		}
		c.unreadable(src, what+" runs code with a part only known when it runs ("+shown(src)+"), which the shell reads as code")
		out := c.script(strings.NewReplacer(string(markSplit), "").Replace(src), via)
		if what == "eval" {
			c.sc.havoc()
		}
		return out
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
