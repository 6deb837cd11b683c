package bashguard

import (
	"slices"
	"strings"
)

// Programs that run shell code the command line gives them, in an option
// or a configuration value, rather than as a wrapped command: git (-c
// alias.x='!…', core.pager, GIT_SSH_COMMAND …), tar --to-command, rsync
// -e, ssh -o ProxyCommand, make -f - , awk's system(), sed's e. What they
// run is followed as sh -c code where the analysis can read it; otherwise
// it is code the analysis does not know.

// codeOptions checks the code a program runs from its options; ok is
// true when it also produced the command's output (git).
func (c *checker) codeOptions(name string, fields []string, idx int) (stream, bool) {
	switch name {
	case "git":
		c.git(fields, idx)
		return stream{{kind: segProgram, via: "the output of git"}}, true
	case "tar", "bsdtar", "gtar":
		c.optionCode(name, fields, idx, map[string]bool{"--to-command": true, "--use-compress-program": true, "-I": true,
			"--info-script": true, "--new-volume-script": true, "-F": true, "--rsh-command": true, "--rmt-command": true}, "")
		if slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, "--checkpoint-action=exec=") }) {
			for _, f := range fields {
				if v, ok := strings.CutPrefix(f, "--checkpoint-action=exec="); ok {
					c.sideCode(name+" --checkpoint-action", v, idx)
				}
			}
		}
	case "rsync":
		c.optionCode(name, fields, idx, map[string]bool{"-e": true, "--rsh": true}, "e")
		for _, f := range fields {
			if v, ok := strings.CutPrefix(f, "--rsync-path="); ok {
				c.sideCode(name+" --rsync-path", v, idx)
			}
		}
	case "ssh", "scp", "sftp", "autossh":
		c.sshOptions(name, fields, idx)
		if name == "scp" || name == "sftp" {
			c.optionCode(name, fields, idx, map[string]bool{"-S": true}, "S")
		}
	case "make", "gmake":
		c.makefileFromCommand(name, fields, idx)
	case "awk", "gawk", "mawk", "nawk", "busybox-awk":
		c.awk(name, fields, idx)
	case "sed", "gsed":
		c.sed(name, fields, idx)
	case "vi", "vim", "nvim", "view", "ex", "vimdiff", "gvim":
		for i, f := range fields[1:] {
			if f == "-c" || f == "--cmd" || f == "-S" || strings.HasPrefix(f, "+") && len(f) > 1 {
				c.unreadable(name+" "+f, name+" runs the editor commands it is given ("+shown(strings.Join(fields[i+1:min(i+3, len(fields))], " "))+"), which may run shell commands")
				break
			}
		}
	}
	return nil, false
}

// sideCode follows shell code a program runs through sh -c (a pager, an
// editor, a remote shell, a hook) where it may run it: it is read as code
// when the analysis knows it, else it is code the analysis cannot read.
// Programs add arguments of their own to such a command (an editor gets
// the file, ssh's command the host), as sh -c 'CODE "$@"' does.
func (c *checker) sideCode(what, code string, idx int) {
	if code == "" {
		return
	}
	c.maybe(func() stream {
		c.isolated(func() stream {
			saved := c.sc
			c.sc = saved.child("sh")
			c.sc.pos = []string{unknownFields}
			defer func() { c.sc = saved }()
			return c.code(code+` "$@"`, what, []string{what}, idx)
		})
		return nil
	})
}

// optionCode finds the options of fields whose value is a command line
// the program runs (short ones attached, in a cluster ending with one of
// the letters clusterLetters, or as the next argument; long ones with = or
// the next argument).
func (c *checker) optionCode(name string, fields []string, idx int, opts map[string]bool, clusterLetters string) {
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		if f == "--" {
			return
		}
		if opt, val, ok := strings.Cut(f, "="); ok && strings.HasPrefix(f, "--") && opts[opt] {
			c.sideCode(name+" "+opt, val, idx)
			continue
		}
		if opts[f] && i+1 < len(fields) {
			c.sideCode(name+" "+f, fields[i+1], idx)
			i++
			continue
		}
		if len(f) > 2 && f[0] == '-' && f[1] != '-' {
			if opts[f[:2]] {
				c.sideCode(name+" "+f[:2], f[2:], idx)
				continue
			}
			if last := f[len(f)-1:]; strings.Contains(clusterLetters, last) && i+1 < len(fields) {
				c.sideCode(name+" -"+last, fields[i+1], idx)
				i++
			}
		}
	}
}

// sshOptions follows the -o options of ssh, scp and sftp that run a
// local command (ProxyCommand, LocalCommand, KnownHostsCommand).
func (c *checker) sshOptions(name string, fields []string, idx int) {
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		var o string
		switch {
		case f == "-o" && i+1 < len(fields):
			o = fields[i+1]
			i++
		case strings.HasPrefix(f, "-o"):
			o = f[2:]
		default:
			continue
		}
		key, val, ok := strings.Cut(o, "=")
		if !ok {
			key, val, _ = strings.Cut(o, " ")
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "proxycommand", "localcommand", "knownhostscommand", "remotecommand":
			c.sideCode(name+" -o "+key, strings.TrimSpace(val), idx)
		case "match":
			c.unreadable(name+" -o "+o, name+" -o Match may run a command ("+shown(o)+")")
		}
	}
}

// makefileFromCommand follows a makefile the command itself gives make
// (make -f - with a here-document): its recipes run through sh.
func (c *checker) makefileFromCommand(name string, fields []string, idx int) {
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		var file string
		switch {
		case (f == "-f" || f == "--file" || f == "--makefile") && i+1 < len(fields):
			file = fields[i+1]
			i++
		case strings.HasPrefix(f, "--file="), strings.HasPrefix(f, "--makefile="):
			_, file, _ = strings.Cut(f, "=")
		case strings.HasPrefix(f, "-f") && len(f) > 2:
			file = f[2:]
		default:
			continue
		}
		s, fed := c.fed(file, true)
		if w, ok := c.written(file); ok && !fed {
			s, fed = stream{{text: w.text, via: "the file " + file, inexact: !w.sure}}, true
		}
		if !fed {
			continue
		}
		c.unreadable(name+" -f "+shown(file), name+" reads a makefile the command gives it; the recipes it runs are not followed")
		for _, g := range s {
			if g.kind != segText || g.json {
				continue
			}
			for _, line := range strings.Split(g.text, "\n") {
				if strings.HasPrefix(line, "\t") {
					c.sideCode(name+" recipe", strings.TrimLeft(line, "\t@-+"), idx)
				}
			}
		}
	}
}

// awk checks an awk program: system(), print | "cmd" and "cmd" | getline
// run shell commands. What it runs is not followed; a string in it that,
// as shell code, the guard would refuse is refused.
func (c *checker) awk(name string, fields []string, idx int) {
	program, fromFile := "", false
	var files []string // program files (-f, -E, -i, -W exec)
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		// value is an option's argument: the rest of f, else the next
		// field.
		value := func(rest string) string {
			if rest != "" {
				return rest
			}
			if i+1 < len(fields) {
				i++
				return fields[i]
			}
			return ""
		}
		switch {
		case f == "--":
			if i+1 < len(fields) && program == "" && !fromFile {
				program = fields[i+1]
			}
			i = len(fields)
		case strings.HasPrefix(f, "--"):
			// getopt_long takes any unambiguous abbreviation (--fi=x is
			// --file=x).
			opt, val, hasVal := strings.Cut(f[2:], "=")
			switch {
			case opt == "":
			case isPrefixOfAny(opt, "file", "exec", "include"):
				fromFile = true
				if !hasVal {
					val = value("")
				}
				files = append(files, val)
			case isPrefixOfAny(opt, "source"):
				if !hasVal {
					val = value("")
				}
				program += "\n" + val
			case isPrefixOfAny(opt, "assign", "field-separator", "load") && !hasVal:
				i++
			}
		case strings.HasPrefix(f, "-") && len(f) > 1:
			// A cluster of short options: -bf prog, -fprog, -We, -W exec.
			for j := 1; j < len(f); j++ {
				switch f[j] {
				case 'f', 'E', 'i':
					files = append(files, value(f[j+1:]))
					fromFile = true
				case 'e':
					program += "\n" + value(f[j+1:])
				case 'W':
					// gawk's and mawk's -W options (-W exec FILE, -W
					// source=…, abbreviated): only the ones that read
					// nothing are known.
					if w := value(f[j+1:]); !slices.Contains([]string{"version", "v", "lint", "posix", "traditional", "sandbox", "usage", "help"}, w) {
						fromFile = true
						if isPrefixOfAny(w, "exec", "file", "include") && i+1 < len(fields) {
							i++
							files = append(files, fields[i])
						}
					}
				case 'F', 'v', 'l':
					value(f[j+1:])
				default:
					continue
				}
				break
			}
		default:
			if program == "" && !fromFile {
				program = f
			}
			i = len(fields)
		}
	}
	if fromFile {
		c.unreadable(name+" -f", name+" runs a program from a file, which may run shell commands")
		// A file the command itself wrote or fed (<(…)): its strings
		// are checked as shell code like an inline program's.
		var seen string
		for _, f := range files {
			text, _ := c.open(f).text()
			seen += "\n" + text
		}
		if seen != "" && c.stringsAsCode(seen, name, idx) {
			c.unknown(Unknown{Kind: UnknownCode, What: shown(name + " " + seen),
				Reason:       name + "'s program file may run shell commands (system(), print | \"…\", \"…\" | getline), which are not followed",
				Instead:      "run the commands directly in the shell instead of through " + name,
				ReachesShell: true})
		}
		return
	}
	if !strings.Contains(program, "system") && !strings.Contains(program, "|") {
		return
	}
	c.unknown(Unknown{Kind: UnknownCode, What: shown(name + " " + program),
		Reason:       name + "'s program may run shell commands (system(), print | \"…\", \"…\" | getline), which are not followed",
		Instead:      "run the commands directly in the shell instead of through " + name,
		ReachesShell: c.stringsAsCode(program, name, idx)})
}

// isPrefixOfAny reports whether opt abbreviates one of the long option
// names.
func isPrefixOfAny(opt string, names ...string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, opt) {
			return true
		}
	}
	return false
}

// stringsAsCode reports whether a double-quoted string of another
// language's program would be refused as shell code.
func (c *checker) stringsAsCode(program, via string, idx int) bool {
	for _, s := range quotedStrings(program) {
		if c.hypothesis(func() { c.code(s, via, []string{via}, idx) }) {
			return true
		}
	}
	return false
}

// quotedStrings are the "…" literals of program, their \" and \\ read.
func quotedStrings(program string) []string {
	var out []string
	for i := 0; i < len(program); i++ {
		if program[i] != '"' {
			continue
		}
		var b strings.Builder
		j := i + 1
		for ; j < len(program) && program[j] != '"'; j++ {
			if program[j] == '\\' && j+1 < len(program) {
				j++
			}
			b.WriteByte(program[j])
		}
		out = append(out, b.String())
		i = j
	}
	return out
}

// sed checks a sed script for the commands that run shell code: GNU
// sed's e command and the s///e flag.
func (c *checker) sed(name string, fields []string, idx int) {
	var scripts []string
	fromFile, haveE := false, false
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "--":
			if i+1 < len(fields) && !haveE && !fromFile {
				scripts = append(scripts, fields[i+1])
			}
			i = len(fields)
		case f == "-e" || f == "--expression":
			if i+1 < len(fields) {
				scripts = append(scripts, fields[i+1])
			}
			haveE = true
			i++
		case strings.HasPrefix(f, "--expression="):
			scripts = append(scripts, strings.TrimPrefix(f, "--expression="))
			haveE = true
		case f == "-f" || f == "--file" || strings.HasPrefix(f, "--file="):
			fromFile = true
			if f == "-f" || f == "--file" {
				i++
			}
		case f == "-l" || f == "--line-length":
			i++
		case strings.HasPrefix(f, "-e") && len(f) > 2:
			scripts = append(scripts, f[2:])
			haveE = true
		case strings.HasPrefix(f, "-") && len(f) > 1:
			if strings.ContainsRune(f[1:], 'f') && !strings.HasPrefix(f, "--") {
				fromFile = true
				i++
			}
		default:
			if !haveE && !fromFile && len(scripts) == 0 {
				scripts = append(scripts, f)
			}
		}
	}
	if fromFile {
		c.unreadable(name+" -f", name+" runs a script from a file, which may run shell commands (e, s///e)")
	}
	for _, s := range scripts {
		cmds, ok := sedExec(s)
		if !ok {
			c.unknown(Unknown{Kind: UnknownCode, What: shown(name + " " + s), Reason: name + "'s script cannot be read, and sed's e command runs shell commands",
				Instead: "write the sed script plainly, or run the commands directly"})
			continue
		}
		for _, cmd := range cmds {
			if cmd == "" {
				c.unknownCode(name+" "+s, name+" runs text it edits as a shell command (s///e, or e without a command)",
					"run the commands directly in the shell instead of through sed's e")
				continue
			}
			c.sideCode(name+" e", cmd, idx)
		}
	}
}

// sedExec finds the shell commands a sed script runs: each e command's
// text ("" for e alone and for s///e, which run the pattern space). ok is
// false for a script it cannot read.
func sedExec(s string) (cmds []string, ok bool) {
	i := 0
	skipAddr := func() bool {
		for i < len(s) {
			switch ch := s[i]; {
			case ch >= '0' && ch <= '9', ch == '$', ch == ',', ch == '~', ch == '+', ch == '!', ch == ' ', ch == '\t':
				i++
			case ch == '/' || ch == '\\':
				delim := byte('/')
				if ch == '\\' {
					if i+1 >= len(s) {
						return false
					}
					i++
					delim = s[i]
				}
				i++
				for i < len(s) && s[i] != delim {
					if s[i] == '\\' {
						i++
					}
					i++
				}
				if i >= len(s) {
					return false
				}
				i++
				for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
					i++
				}
			default:
				return true
			}
		}
		return true
	}
	toEOL := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = len(s) - i
		}
		t := s[i : i+j]
		i += j
		return t
	}
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', ';', '{', '}':
			i++
			continue
		case '#':
			toEOL()
			continue
		}
		if !skipAddr() || i >= len(s) {
			return cmds, i >= len(s)
		}
		ch := s[i]
		i++
		switch ch {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == ' ') {
				i++
			}
		case 'a', 'i', 'c', 'r', 'R', 'w', 'W', 'b', 't', 'T', ':', 'v':
			toEOL()
		case 'e':
			cmds = append(cmds, strings.TrimSpace(toEOL()))
		case 's', 'y':
			if i >= len(s) {
				return cmds, false
			}
			delim := s[i]
			i++
			for part := 0; part < 2; part++ {
				for i < len(s) && s[i] != delim {
					if s[i] == '\\' {
						i++
					}
					i++
				}
				if i >= len(s) {
					return cmds, false
				}
				i++
			}
			if ch == 's' {
				for i < len(s) && strings.IndexByte("gpiImMe0123456789w", s[i]) >= 0 {
					if s[i] == 'e' {
						cmds = append(cmds, "")
					}
					if s[i] == 'w' {
						toEOL()
						break
					}
					i++
				}
			}
		default:
			return cmds, false
		}
	}
	return cmds, true
}

// gitCodeKeys are configuration keys whose value git runs as a shell
// command; gitHarmless are keys that change no program git runs.
var (
	gitCodeKeys = map[string]bool{"core.pager": true, "core.editor": true, "sequence.editor": true, "core.sshcommand": true,
		"core.askpass": true, "diff.external": true, "credential.helper": true, "core.fsmonitor": true, "gpg.program": true}
	gitHarmless = []string{"user.", "author.", "committer.", "color.", "advice.", "log.", "status.", "column.", "i18n.", "format.",
		"core.quotepath", "core.autocrlf", "core.filemode", "core.safecrlf", "core.ignorecase", "core.abbrev", "core.longpaths",
		"core.symlinks", "core.eol", "init.defaultbranch", "safe.directory", "commit.gpgsign", "tag.gpgsign", "pull.rebase", "pull.ff",
		"push.default", "push.autosetupremote", "merge.ff", "merge.conflictstyle", "rebase.autostash", "rebase.autosquash",
		"fetch.prune", "diff.renames", "diff.noprefix", "diff.algorithm", "gc.auto", "maintenance.auto", "protocol.version",
		"http.sslverify", "http.postbuffer", "http.version", "commit.verbose", "blame.", "grep.", "help.autocorrect",
		"feature.", "checkout.defaultremote", "branch.autosetupmerge", "init.templatedir="}
	// gitCodeEnv are variables whose value git runs as a shell command.
	gitCodeEnv = []string{"GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS",
		"SSH_ASKPASS", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "EDITOR", "VISUAL", "PAGER", "LESSOPEN"}
	// gitHarmlessEnv are GIT_ variables that change no program git runs.
	gitHarmlessEnv = map[string]bool{"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true,
		"GIT_AUTHOR_DATE": true, "GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true,
		"GIT_TERMINAL_PROMPT": true, "GIT_INDEX_FILE": true, "GIT_NAMESPACE": true, "GIT_CEILING_DIRECTORIES": true,
		"GIT_DISCOVERY_ACROSS_FILESYSTEM": true, "GIT_TRACE": true, "GIT_TRACE2": true, "GIT_CURL_VERBOSE": true,
		"GIT_SSL_NO_VERIFY": true, "GIT_LITERAL_PATHSPECS": true, "GIT_OPTIONAL_LOCKS": true, "GIT_FLUSH": true,
		"GIT_CONFIG_NOSYSTEM": true, "GIT_ADVICE": true, "GIT_OBJECT_DIRECTORY": true, "GIT_PROTOCOL_FROM_USER": true}
	// gitCommands are git's own commands: an alias cannot replace one,
	// while another name may be an alias from git's configuration files
	// or a git-NAME program.
	gitCommands = map[string]bool{}
)

func init() {
	for _, n := range strings.Fields(`add am annotate apply archive bisect blame branch bundle cat-file check-attr check-ignore
		check-mailmap check-ref-format checkout checkout-index cherry cherry-pick clean clone column commit commit-graph commit-tree
		config count-objects credential describe diff diff-files diff-index diff-tree difftool fast-export fast-import fetch
		fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck gc get-tar-commit-id grep
		hash-object help hook index-pack init interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit maintenance
		merge merge-base merge-file merge-index merge-tree mktag mktree multi-pack-index mv name-rev notes pack-objects
		pack-redundant pack-refs patch-id prune prune-packed pull push range-diff read-tree rebase reflog remote repack replace
		request-pull rerere reset restore rev-list rev-parse revert rm send-pack shortlog show show-branch show-index show-ref
		sparse-checkout stash status stripspace submodule switch symbolic-ref tag unpack-file unpack-objects update-index
		update-ref update-server-info var verify-commit verify-pack verify-tag version whatchanged worktree write-tree lfs`) {
		gitCommands[n] = true
	}
}

// git follows the shell code git runs from its command line: -c alias.x
// ='!…' and the keys that name a command, the variables that do
// (GIT_SSH_COMMAND, EDITOR …), and the subcommand options that take one
// (rebase --exec, submodule foreach …). An alias git expands is run as the
// git command it stands for.
func (c *checker) git(fields []string, idx int) {
	for _, v := range gitCodeEnv {
		if val, ok := c.sc.vars[v]; ok && val != "" {
			c.sideCode("git with "+v, val, idx)
		}
	}
	for v := range c.sc.vars {
		if strings.HasPrefix(v, "GIT_") && !gitHarmlessEnv[v] && !slices.Contains(gitCodeEnv, v) {
			c.unreadable("git with "+v, "git runs with "+v+" set, which may make it run other commands or read another configuration")
		}
	}
	aliases := map[string]string{}
	i := 1
	for ; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-c" && i+1 < len(fields):
			i++
			c.gitConfig(fields[i], aliases, idx)
		case strings.HasPrefix(f, "--config-env"):
			c.unreadable("git "+f, "git takes a configuration value from the environment ("+shown(f)+"), which may name a command")
			if f == "--config-env" {
				i++
			}
		case f == "--exec-path" || strings.HasPrefix(f, "--exec-path="):
			if f != "--exec-path" {
				c.unreadable("git "+f, "git runs its commands from another directory ("+shown(f)+")")
			}
		case f == "-C" || f == "--git-dir" || f == "--work-tree" || f == "--namespace" || f == "--super-prefix" || f == "--attr-source":
			i++
		case strings.HasPrefix(f, "-"):
		default:
			goto sub
		}
	}
	return
sub:
	name := fields[i]
	rest := fields[i+1:]
	if val, ok := aliases[name]; ok {
		switch {
		case strings.HasPrefix(val, "!"):
			// A shell alias: sh -c 'value "$@"' with the arguments.
			c.maybe(func() stream {
				return c.isolated(func() stream {
					saved := c.sc
					c.sc = saved.child("sh")
					c.sc.pos = slices.Clone(rest)
					defer func() { c.sc = saved }()
					return c.code(val[1:]+` "$@"`, "git alias "+name, []string{"git alias " + name}, idx)
				})
			})
		default:
			words := c.splitString(val)
			c.withVia([]string{"git alias " + name}, func() {
				c.run(append(append([]string{"git"}, words...), rest...), runOpts{noFunc: true, external: true})
			})
		}
		return
	}
	switch {
	case hasMarks(name):
		c.unreadable("git "+shown(name), "the git command is only known when the command runs")
		return
	case !gitCommands[name]:
		c.unreadable("git "+name, "git "+name+" is not one of git's own commands: it may be an alias from git's configuration files or a git-"+name+" program")
		return
	}
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		next := ""
		if j+1 < len(rest) {
			next = rest[j+1]
		}
		switch {
		case name == "submodule" && a == "foreach":
			if k := j + 1; k < len(rest) {
				for k < len(rest) && strings.HasPrefix(rest[k], "-") {
					k++
				}
				if k < len(rest) {
					c.sideCode("git submodule foreach", strings.Join(rest[k:], " "), idx)
				}
			}
			return
		case name == "bisect" && a == "run":
			if j+1 < len(rest) {
				c.withVia([]string{"git bisect run"}, func() {
					c.maybe(func() stream { return c.run(rest[j+1:], runOpts{noFunc: true, external: true}) })
				})
			}
			return
		case (a == "-x" || a == "--exec") && (name == "rebase" || name == "difftool"), a == "--extcmd" && name == "difftool",
			(a == "-u" || a == "--upload-pack" || a == "--receive-pack" || a == "--exec") && next != "",
			a == "-O" && name == "grep", strings.HasSuffix(a, "-filter") && name == "filter-branch":
			c.sideCode("git "+name+" "+a, next, idx)
			j++
		case strings.HasPrefix(a, "--exec="), strings.HasPrefix(a, "--upload-pack="), strings.HasPrefix(a, "--receive-pack="),
			strings.HasPrefix(a, "--extcmd="), strings.HasPrefix(a, "--open-files-in-pager="):
			opt, v, _ := strings.Cut(a, "=")
			c.sideCode("git "+name+" "+opt, v, idx)
		case strings.HasPrefix(a, "-O") && len(a) > 2 && name == "grep":
			c.sideCode("git grep -O", a[2:], idx)
		case strings.HasPrefix(a, "ext::"):
			c.sideCode("git "+name+" ext::", strings.TrimPrefix(a, "ext::"), idx)
		}
	}
}

// gitConfig applies one -c key=value.
func (c *checker) gitConfig(kv string, aliases map[string]string, idx int) {
	key, val, _ := strings.Cut(kv, "=")
	lower := strings.ToLower(key)
	switch {
	case hasMarks(key):
		c.unreadable("git -c "+shown(kv), "git is given a configuration key only known when the command runs")
	case strings.HasPrefix(lower, "alias."):
		aliases[key[len("alias."):]] = val
		if hasMarks(val) {
			c.unreadable("git -c "+shown(kv), "git is given an alias only known when the command runs")
		}
	case gitCodeKeys[lower] || strings.HasPrefix(lower, "pager.") && !isBoolWord(val):
		c.sideCode("git -c "+key, strings.TrimPrefix(val, "!"), idx)
	case slices.ContainsFunc(gitHarmless, func(p string) bool { return lower == p || strings.HasSuffix(p, ".") && strings.HasPrefix(lower, p) }):
	case strings.HasPrefix(lower, "pager."):
	default:
		c.unknown(Unknown{Kind: UnknownCode, What: shown("git -c " + kv),
			Reason:       "git -c " + key + " may make git run a command (" + shown(val) + "), which toolhost does not follow",
			Instead:      "run the command directly, or set only git settings that run nothing (user.name, color.ui …)",
			ReachesShell: c.hypothesis(func() { c.code(val, "git -c "+key, nil, idx) })})
	}
}

func isBoolWord(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "1", "0", "":
		return true
	}
	return false
}

// tee passes its input on and writes it to each file operand (a >(…)
// among them is fed by call).
func (c *checker) tee(fields []string) stream {
	appends := false
	var files []string
	for i, a := range fields[1:] {
		switch {
		case a == "--":
			files = append(files, fields[i+2:]...)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			appends = appends || strings.Contains(a, "a") && !strings.HasPrefix(a, "--") || a == "--append"
			continue
		default:
			files = append(files, a)
			continue
		}
		break
	}
	in := c.in.readAll()
	text, exact := in.text()
	for _, f := range files {
		if _, ok := c.outProcs[f]; ok {
			continue
		}
		c.wrote(f, text, exact && !appends)
	}
	return in
}
