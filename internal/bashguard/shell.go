package bashguard

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// child is the scope of a new shell process started from s: the exported
// variables and functions, the working directory.
func (s *scope) child(shell string) *scope {
	n := newScope()
	for name, v := range s.vars {
		switch exp := s.exported[name]; {
		case exp == on || s.allExport == on || name == "PATH":
			n.vars[name], n.exported[name] = v, on
		case exp == unsure || s.allExport == unsure:
			// It may reach the child, or the child has the
			// environment's value (or none).
			n.vars[name], n.exported[name] = joinValue(v, string(markExternal)), on
		}
	}
	for name := range s.cleared {
		if _, set := n.vars[name]; !set {
			n.cleared[name] = true
		}
	}
	for name, exp := range s.exportedFuncs {
		f, ok := s.funcs[name]
		switch {
		case exp == on && ok:
			n.funcs[name], n.exportedFuncs[name] = f, on
		case exp != off:
			n.unsure[name] = true
		}
	}
	for name := range s.unsure {
		if s.exportedFuncs[name] != off {
			n.unsure[name] = true
		}
	}
	n.arg0, n.shell = shell, shell
	if shell == "rbash" {
		n.shell = "bash"
	}
	n.inheritOptions(s)
	if shell == "sh" || shell == "dash" || shell == "ash" {
		n.echoEsc = on
	}
	n.cwd, n.cwdLost = s.cwd, s.cwdLost
	n.filesLimited = s.filesLimited
	// Code the analysis could not read may have exported anything.
	n.lost = s.lost
	return n
}

// checker holds the state of one analysis.
type checker struct {
	a  *Analysis
	b  *budget
	sc *scope
	// progs finds the file a command word runs; nil names programs by
	// their name as written.
	progs Programs
	// in is the standard input of the statement being run.
	in *reader
	// files are the files this command writes (path → what it writes),
	// read back only when the command runs one as a script.
	files map[string]file
	// wroteUnknown is set once the command wrote a file whose name is
	// only known when it runs: a script whose path is not known may be it.
	wroteUnknown bool
	// held are files a descriptor stays open on for writing (exec 3>f),
	// or that a job running beside the shell wrote: what they hold is
	// never sure. heldUnknown is set when such a file's name is not
	// known.
	held        map[string]bool
	heldUnknown bool
	// concurrent > 0 while analysing what runs beside the shell: a
	// background job, a pipeline's stage, a process substitution.
	concurrent int
	// stmtWrites are the files the redirections of the statement being
	// run open for writing.
	stmtWrites []string
	// fds are what a path such as /dev/fd/3 or a process substitution's
	// /dev/fd/63 reads: exec 3<<<'…', <(…).
	fds map[string]stream
	// outProcs are the >(…) process substitutions of the statement being
	// run, by path, not yet fed.
	outProcs map[string]*syntax.ProcSubst
	// netFDs are the descriptors opened on a connection (exec
	// 3<>/dev/tcp/h/p): what is written to them goes out; netAny is such a
	// connection opened on a descriptor only known at run time ({fd}<>…).
	netFDs map[string]string
	netAny string
	// procFDs are the descriptors opened on a >(…) (3> >(curl -d @- …)).
	procFDs map[string]string
	nextFD  int
	// depth counts nested scripts (bash -c, eval …), substDepth command
	// substitutions, callDepth function calls.
	depth, substDepth, callDepth, calls int
	via                                 []string
	// line and col are the position of the top-level statement.
	line, col int
	// defined > 0 while analysing a function body or alias value where it
	// is defined.
	defined int
	// redirs are the redirections of the statement being run, for the
	// first command recorded in it.
	redirs []Redirect
	// src is the text of the script being walked (alias expansion reads
	// the rest of a command from it).
	src string
	// inAlias are the aliases being expanded (an alias is not expanded
	// inside its own value).
	inAlias map[string]bool
	// view is the alias expansion of the line bash is reading; lineEnd is
	// the last line of the script read so far.
	view    aliasView
	lineEnd int
	// cfgs are expansion configs free for reuse.
	cfgs []*expand.Config
	// hypo > 0 while testing what a computed program name would do were
	// it a shell.
	hypo int
	// execGen counts exec commands without a program: their
	// redirections stay for the rest of the shell.
	execGen int
	// unset are the variables the word being expanded uses with a default
	// (${X:-…}) that the guard reads as unset.
	unset map[string]bool
	// inexact is set while a word being expanded reads what the analysis
	// cannot compute exactly: an element of an array whose elements are
	// not all known, or an operation on a value outside ASCII whose
	// result depends on the locale.
	inexact bool
	// leaves says which boundaries the current path may have crossed
	// (return, break, exit): the rest of a list runs only on some paths.
	leaves leave
	// globbed is set by the expander when it tried to match a file name
	// pattern in the field it is expanding.
	globbed bool
	// arithSeen are the variables whose values the arithmetic expression
	// being checked has read already.
	arithSeen map[string]bool
}

func newChecker(o Options) *checker {
	c := &checker{a: &Analysis{}, b: newBudget(), sc: newScope(), progs: o.Programs, in: &reader{segs: stream{{kind: segProgram, via: inheritedStdin}}}, files: map[string]file{},
		fds: map[string]stream{}, outProcs: map[string]*syntax.ProcSubst{}, netFDs: map[string]string{}, procFDs: map[string]string{}, nextFD: 63, inAlias: map[string]bool{}, held: map[string]bool{}}
	c.view = aliasView{expand: off}
	c.sc.cwd = cleanPath(o.Dir)
	return c
}

// recoverInto turns a panic of the parser or expander on hostile input
// into a refusal.
func (c *checker) recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = &Error{Kind: ErrUnparsable, Detail: fmt.Sprintf("the shell parser failed on it (%v)", r)}
	}
}

// script parses src and runs it in the current scope with the current
// standard input; it returns what the script prints. via, when set, is
// pushed for the commands inside.
func (c *checker) script(src string, via []string) stream {
	if c.b.err != nil {
		return nil
	}
	if c.depth > MaxDepth {
		c.b.over(fmt.Sprintf("bash -c/sh -c/eval strings are nested more than %d levels", MaxDepth))
		return nil
	}
	if !c.b.text(len(src)) {
		return nil
	}
	if d := nesting(src, MaxNesting); d > MaxNesting {
		c.b.over(fmt.Sprintf("the command nests groups, substitutions or compound commands more than %d levels deep", MaxNesting))
		return nil
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		if c.depth == 0 {
			c.b.err = &Error{Kind: ErrUnparsable, Detail: err.Error()}
			return nil
		}
		if c.hypo > 0 {
			// Were the program a shell, it would refuse this text and run
			// nothing (it is likely another language's code: python -c).
			return nil
		}
		// A nested script bash could not parse either does not run; but
		// what it would run cannot be known, so it is code the guard
		// cannot read.
		c.unknownCode(src, "the nested script cannot be parsed as bash ("+err.Error()+")", "fix the quoting of the nested command, or run it directly")
		return nil
	}
	savedSrc, savedVia, savedEnd, savedView := c.src, c.via, c.lineEnd, c.view
	c.src = src
	c.via = append(slices.Clip(c.via), via...)
	c.depth++
	if len(c.inAlias) == 0 {
		c.lineEnd = 0
	}
	out := c.lines(f.Stmts)
	c.depth--
	// The line bash read before this script is still the one it runs.
	c.src, c.via, c.lineEnd, c.view = savedSrc, savedVia, savedEnd, savedView
	return out
}

// lines runs the statements of a script as bash reads them: a line at a
// time, with the aliases defined before the line.
func (c *checker) lines(list []*syntax.Stmt) stream {
	var out stream
	for i, st := range list {
		if c.b.err != nil {
			return out
		}
		if c.leaves != 0 {
			return c.cat(out, c.rest(func() stream { return c.lines(list[i:]) }))
		}
		if c.depth == 1 {
			c.line, c.col = int(st.Pos().Line()), int(st.Pos().Col())
		}
		if l := int(st.Pos().Line()); l > c.lineEnd && len(c.inAlias) == 0 {
			c.view = c.currentView()
		}
		c.lineEnd = max(c.lineEnd, int(st.End().Line()))
		out = c.cat(out, c.stmt(st))
	}
	return out
}

// currentView is the alias expansion bash would use for a line it reads
// now.
func (c *checker) currentView() aliasView {
	return aliasView{expand: c.sc.expandsAliases(), aliases: maps.Clone(c.sc.aliases), unsure: maps.Clone(c.sc.unsure)}
}

// stmts runs a statement list.
func (c *checker) stmts(list []*syntax.Stmt) stream {
	var out stream
	for i, st := range list {
		if c.b.err != nil {
			return out
		}
		if c.leaves != 0 {
			return c.cat(out, c.rest(func() stream { return c.stmts(list[i:]) }))
		}
		out = c.cat(out, c.stmt(st))
	}
	return out
}

// rest runs what follows a statement that may have left the list (return,
// break, exit in a branch): it runs on the paths that did not leave.
func (c *checker) rest(fn func() stream) stream {
	return c.maybe(func() stream {
		c.leaves = 0
		return fn()
	})
}

// cat appends b to a; what b adds counts against the budget.
func (c *checker) cat(a, b stream) stream {
	if len(b) == 0 {
		return a
	}
	if !c.b.text(b.size()) {
		return a
	}
	return append(a, b...)
}

// outTarget is where a statement's redirections point: its standard
// output, and the standard input they give it (nil: inherited).
type outTarget struct {
	path    string // a file, /dev/tcp/…, or a >(…) path
	none    bool   // to stderr or closed: nothing reaches the pipe
	appends bool   // >>: the file keeps what it held
	// mayFail is set when the redirection may not write the file (>
	// under set -o noclobber refuses a file that is there).
	mayFail bool
	in      *reader
}

// stmt runs one statement with its redirections and returns what reaches
// its standard output.
func (c *checker) stmt(st *syntax.Stmt) stream {
	if !c.b.step() {
		return nil
	}
	c.beforeStatement()
	if st.Background {
		// A background job is a subshell running beside what follows:
		// nothing it changes reaches the shell, and what it prints comes
		// in no known order.
		c.concurrent++
		defer func() { c.concurrent-- }()
		return inexact(c.isolated(func() stream { return c.statement(st) }))
	}
	return c.statement(st)
}

func (c *checker) statement(st *syntax.Stmt) stream {
	savedIn, savedRedirs, savedWrites, gen := c.in, c.redirs, c.stmtWrites, c.execGen
	defer func() {
		if c.execGen != gen {
			savedIn = c.in // exec < …: the shell's input from now on
		}
		c.in, c.redirs, c.stmtWrites = savedIn, savedRedirs, savedWrites
	}()
	c.redirs, c.stmtWrites = nil, nil
	var target outTarget
	for _, r := range st.Redirs {
		c.redirect(r, &target)
	}
	var out stream
	if call, ok := st.Cmd.(*syntax.CallExpr); ok {
		// bash expands a simple command's words before it applies the
		// redirections: a $(…) in an argument reads the shell's input,
		// not the command's here-string.
		out = c.call(call, target.in)
	} else {
		if target.in != nil {
			c.in = target.in
		}
		if st.Cmd != nil {
			out = c.command(st.Cmd)
		}
	}
	return c.deliver(out, target)
}

// deliver sends a statement's output where its redirections point and
// returns what is left for the pipe.
func (c *checker) deliver(out stream, target outTarget) stream {
	switch {
	case target.none:
		return nil
	case target.path == "":
		return out
	}
	if ps, ok := c.outProcs[target.path]; ok {
		delete(c.outProcs, target.path)
		c.feedProc(ps, out)
		return nil
	}
	if isNetworkPath(target.path) {
		c.network(target.path, out)
		return nil
	}
	text, exact := out.text()
	c.wrote(target.path, text, exact && !target.appends && !target.mayFail)
	return nil
}

// wrote records that the command wrote text to path; sure is false when
// what the file holds afterwards is not exactly text (a program that may
// add to it, a write that may not happen).
func (c *checker) wrote(path, text string, sure bool) {
	if unaliased(path) {
		return
	}
	key, ok := c.filePath(path)
	if !ok {
		// Any file may be the one written.
		c.wroteUnknown = true
		c.programMayWrite()
		return
	}
	// Another name of a file the command wrote before (a link the agent
	// made earlier) would be written too.
	for p, f := range c.files {
		if p != key && f.sure {
			f.sure = false
			c.files[p] = f
		}
	}
	switch {
	case c.sc.filesLimited:
		sure = false
	case c.concurrent > 0:
		// A background job, a pipeline's stage, a process substitution:
		// its writes come in no known order with the shell's.
		c.held[key] = true
		sure = false
	case c.held[key]:
		sure = false
	}
	c.files[key] = file{text: text, sure: sure}
}

// hold notes that path stays open for writing for the rest of the shell
// (exec 3>path): what it holds is never sure again.
func (c *checker) hold(path string) {
	if unaliased(path) {
		return
	}
	key, ok := c.filePath(path)
	if !ok {
		c.wroteUnknown = true
		c.programMayWrite()
		c.heldUnknown = true
		return
	}
	c.held[key] = true
	c.wrote(path, "", false)
}

// unaliased reports whether writing p cannot change a file: a device
// that discards or is the terminal, or the shell's own standard streams.
func unaliased(p string) bool {
	switch p {
	case "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2":
		return true
	}
	return isNetworkPath(p)
}

// filePath is the key of path in files: relative to where the command
// started; ok is false when it is not known (a name computed at run time,
// a relative path after cd to a directory the analysis does not know).
func (c *checker) filePath(path string) (string, bool) {
	if hasMarks(path) || path == "" {
		return "", false
	}
	if strings.HasPrefix(path, "/proc/") || strings.HasPrefix(path, "/dev/") || slices.Contains(strings.Split(path, "/"), "..") {
		// /proc/self/cwd/f, /dev/fd/3 name files by a process's state;
		// a/../f is f only if a is not a link: which file it is shows
		// only when the command runs.
		return "", false
	}
	if strings.HasPrefix(path, "/") {
		return cleanPath(path), true
	}
	if c.sc.cwdLost {
		return "", false
	}
	return cleanPath(joinPath(c.sc.cwd, path)), true
}

// written is what the command wrote to path, if it wrote it.
func (c *checker) written(path string) (file, bool) {
	key, ok := c.filePath(path)
	if !ok {
		return file{}, false
	}
	f, ok := c.files[key]
	return f, ok
}

// programMayWrite is called before a program the analysis does not model
// runs: it may change any file, so what the command wrote before is no
// longer sure.
func (c *checker) programMayWrite() {
	if c.heldUnknown {
		for p := range c.files {
			c.held[p] = true
		}
	}
	for p, f := range c.files {
		if f.sure {
			f.sure = false
			c.files[p] = f
		}
	}
}

// isNetworkPath reports whether bash opens a connection for path.
func isNetworkPath(p string) bool {
	return strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/")
}

// redirect applies one redirection: it may replace the statement's
// standard input, open a descriptor, or send the output elsewhere.
func (c *checker) redirect(r *syntax.Redirect, target *outTarget) {
	fd := ""
	if r.N != nil {
		fd = r.N.Value
	}
	rec := Redirect{Op: fd + r.Op.String()}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		text := ""
		if r.Hdoc != nil {
			text = c.document(r.Hdoc)
		}
		rec.Target = r.Word.Lit()
		c.input(target, fd, stream{{text: text, via: "a heredoc"}})
	case syntax.WordHdoc:
		text := c.literal(r.Word) + "\n"
		rec.Target = shown(text)
		c.input(target, fd, stream{{text: text, via: "a here-string"}})
	case syntax.RdrIn, syntax.RdrInOut:
		path := c.word(r.Word)
		rec.Target = shown(path)
		c.netOpen(fd, path)
		if r.Op == syntax.RdrInOut {
			// <> opens for writing too, without truncating: what is
			// written through it lands inside what was there.
			c.stmtWrites = append(c.stmtWrites, path)
			if strings.HasPrefix(fd, "{") {
				c.hold(path)
			} else {
				c.wrote(path, "", false)
			}
		}
		if isStdinPath(path) && target.in != nil {
			c.input(target, fd, target.in.rest()) // <<< x < /dev/stdin
		} else {
			c.input(target, fd, c.open(path))
		}
	case syntax.DplIn:
		w := c.word(r.Word)
		rec.Target = shown(w)
		if w == "-" {
			c.input(target, fd, nil)
		} else if s, ok := c.fds["/dev/fd/"+w]; ok {
			c.input(target, fd, s)
		}
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
		path := c.word(r.Word)
		rec.Target = shown(path)
		if fd != "" && fd != "1" {
			c.netOpen(fd, path)
			if _, ok := c.outProcs[path]; ok && !strings.HasPrefix(fd, "{") {
				// 3> >(…): what is written to 3 is what the
				// substitution reads.
				c.procFDs[fd] = path
			}
		}
		c.stmtWrites = append(c.stmtWrites, path)
		if strings.HasPrefix(fd, "{") {
			// {var}>file keeps the descriptor open after the command.
			c.hold(path)
		}
		switch {
		case (fd == "" || fd == "1") && (path == "/dev/stdout" || path == "/dev/fd/1" || path == "/proc/self/fd/1"):
			// The standard output itself (a pipe, when there is one).
		case (fd == "" || fd == "1") && (path == "/dev/stderr" || path == "/dev/fd/2" || path == "/proc/self/fd/2"):
			target.path, target.none = "", true
		case fd == "" || fd == "1" || r.Op == syntax.RdrAll || r.Op == syntax.AppAll || r.Op == syntax.RdrAllClob || r.Op == syntax.AppAllClob:
			target.path, target.none = path, false
			target.appends = r.Op == syntax.AppOut || r.Op == syntax.AppAll || r.Op == syntax.AppClob || r.Op == syntax.AppAllClob
			target.mayFail = (r.Op == syntax.RdrOut || r.Op == syntax.RdrAll) && c.sc.opt("noclobber") != off
		default:
			// Another descriptor (2> file): the file gets what the guard
			// does not follow.
			c.wrote(path, "", false)
		}
	case syntax.DplOut:
		w := c.word(r.Word)
		rec.Target = shown(w)
		if fd == "" || fd == "1" {
			switch net, ok := c.netFD(w); {
			case w == "1":
			case w == "-":
				target.none = true
			case ok:
				// >&3 onto a connection: the output goes out.
				target.path, target.none = net, false
			case c.procFDs[w] != "" && c.outProcs[c.procFDs[w]] != nil:
				// >&3 onto a >(…): the substitution reads it.
				target.path, target.none = c.procFDs[w], false
			default:
				target.path, target.none = "", true
			}
		}
	}
	c.redirs = append(c.redirs, rec)
}

// netOpen notes a connection bash opens on descriptor fd (reading from
// one counts: the request is made), so that writes through the
// descriptor later are seen as going out.
func (c *checker) netOpen(fd, path string) {
	if !isNetworkPath(path) {
		return
	}
	if fd == "" || fd == "0" {
		c.network(path, nil)
		return
	}
	if strings.HasPrefix(fd, "{") {
		c.netAny = path
	} else {
		c.netFDs[fd] = path
	}
	c.network(path, nil)
}

// netFD is the connection a >&w writes to, if it may be one: a
// descriptor opened on one, or one only known at run time once some
// connection is open.
func (c *checker) netFD(w string) (string, bool) {
	if p, ok := c.netFDs[w]; ok {
		return p, true
	}
	if isNumber(w) {
		return "", false
	}
	if c.netAny != "" {
		return c.netAny, true
	}
	if fds := slices.Sorted(maps.Keys(c.netFDs)); len(fds) > 0 {
		return c.netFDs[fds[0]], true
	}
	return "", false
}

// input sets what descriptor fd ("" or "0": standard input) reads.
func (c *checker) input(target *outTarget, fd string, s stream) {
	if fd == "" || fd == "0" {
		target.in = &reader{segs: s}
		return
	}
	c.fds["/dev/fd/"+fd] = s
}

// open returns what reading path gives: the standard input, a descriptor
// or process substitution the command set up, or a file on disk.
func (c *checker) open(path string) stream {
	switch {
	case isStdinPath(path):
		return c.in.rest()
	case path == "/dev/null":
		return nil
	}
	if s, ok := c.fds[fdPath(path)]; ok {
		return s
	}
	if hasMarks(path) {
		return stream{{kind: segFile, via: "a file named at run time"}}
	}
	if isNetworkPath(path) {
		return stream{{kind: segProgram, via: "the connection " + path}}
	}
	if f, ok := c.written(path); ok {
		s := stream{{text: f.text, via: "the file " + path}}
		if !f.sure {
			// What the command wrote, or what was there: the guard
			// still searches the text, the value is not known.
			return inexact(s)
		}
		return s
	}
	return stream{{kind: segFile, via: "the file " + path}}
}

// isStdinPath reports whether opening p reads the standard input:
// /dev/stdin, /dev/fd/0, /proc/self/fd/0, /proc/$$/fd/0.
func isStdinPath(p string) bool {
	switch p {
	case "/dev/stdin", "/dev/fd/0":
		return true
	}
	return strings.HasPrefix(p, "/proc/") && strings.HasSuffix(p, "/fd/0")
}

// fed returns what a program reading the file ref gets when the command
// feeds it: the standard input ("-" for programs that read it so), a
// descriptor or a process substitution the command set up. ok is false for
// a file on disk.
func (c *checker) fed(ref string, dash bool) (stream, bool) {
	if dash && ref == "-" || isStdinPath(ref) {
		return c.in.readAll(), true
	}
	s, ok := c.fds[fdPath(ref)]
	return s, ok
}

// fdPath maps /proc/self/fd/N and /dev/fd/N to one key.
func fdPath(p string) string {
	if n, ok := strings.CutPrefix(p, "/proc/self/fd/"); ok {
		return "/dev/fd/" + n
	}
	return p
}

// command runs a command node with the current standard input.
func (c *checker) command(n syntax.Command) stream {
	switch x := n.(type) {
	case *syntax.CallExpr:
		return c.call(x, nil)
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.Pipe, syntax.PipeAll:
			return c.pipeline(x)
		}
		// a && b, a || b: b runs on some paths only.
		out := c.stmt(x.X)
		return c.cat(out, c.maybe(func() stream { return c.stmt(x.Y) }))
	case *syntax.Block:
		return c.stmts(x.Stmts)
	case *syntax.Subshell:
		return c.isolated(func() stream { return c.stmts(x.Stmts) })
	case *syntax.IfClause:
		return c.ifClause(x)
	case *syntax.WhileClause:
		return c.while(x)
	case *syntax.ForClause:
		return c.forLoop(x)
	case *syntax.CaseClause:
		return c.caseClause(x)
	case *syntax.FuncDecl:
		c.define(x)
		return nil
	case *syntax.ArithmCmd:
		c.arith(x.X)
		return nil
	case *syntax.TestClause:
		c.test(x.X)
		return nil
	case *syntax.DeclClause:
		c.decl(x)
		return nil
	case *syntax.LetClause:
		for _, e := range x.Exprs {
			c.arith(e)
		}
		return nil
	case *syntax.TimeClause:
		if x.Stmt != nil {
			return c.stmt(x.Stmt)
		}
	case *syntax.CoprocClause:
		if x.Stmt != nil {
			c.concurrent++
			defer func() { c.concurrent-- }()
			// The coprocess reads what the shell writes to it later
			// (>&${COPROC[1]}), in no order the analysis follows: any text
			// of the command may reach it.
			saved := c.in
			defer func() { c.in = saved }()
			c.in = &reader{segs: stream{{kind: segProgram, via: "the coprocess's input"}}}
			if containsJSON(c.src) || strings.ContainsAny(c.src, "\\$`") {
				c.in = &reader{segs: stream{{kind: segDerived, via: "what the shell writes to the coprocess"}}}
			}
			return inexact(c.isolated(func() stream { return c.stmt(x.Stmt) }))
		}
	}
	return nil
}

// ifClause runs the condition, then each branch from the state the
// condition left.
func (c *checker) ifClause(x *syntax.IfClause) stream {
	out := c.stmts(x.Cond)
	then := func() stream { return c.stmts(x.Then) }
	switch {
	case x.Else == nil:
		return c.cat(out, c.maybe(then))
	case len(x.Else.Cond) == 0:
		// else: one of the two runs.
		return c.cat(out, c.branches(false, then, func() stream { return c.stmts(x.Else.Then) }))
	}
	return c.cat(out, c.branches(false, then, func() stream { return c.ifClause(x.Else) }))
}

// caseClause runs each item's body from the state after the word; a body
// that falls through (;& ;;&) may run after another, so the bodies are
// then a loop's.
func (c *checker) caseClause(x *syntax.CaseClause) stream {
	c.word(x.Word)
	through := false
	var paths []func() stream
	for _, item := range x.Items {
		through = through || item.Op != syntax.Break
		paths = append(paths, func() stream {
			for _, p := range item.Patterns {
				c.pattern(p)
			}
			return c.stmts(item.Stmts)
		})
	}
	if !through {
		return c.branches(true, paths...)
	}
	return c.loop(func(_ int, exit func()) (stream, bool) {
		exit()
		return c.branches(true, paths...), false
	})
}

// pipeline runs each stage with the previous stage's output as its
// standard input. Each stage is a subshell; the last one runs in the
// shell itself under shopt -s lastpipe.
func (c *checker) pipeline(b *syntax.BinaryCmd) stream {
	var stages []*syntax.Stmt
	var flatten func(st *syntax.Stmt)
	flatten = func(st *syntax.Stmt) {
		if bc, ok := st.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) && len(st.Redirs) == 0 {
			flatten(bc.X)
			flatten(bc.Y)
			return
		}
		stages = append(stages, st)
	}
	flatten(b.X)
	flatten(b.Y)
	saved := c.in
	defer func() { c.in = saved }()
	// The stages run at the same time.
	c.concurrent++
	defer func() { c.concurrent-- }()
	var out stream
	for i, st := range stages {
		if i > 0 {
			c.in = &reader{segs: out}
		}
		run := func() stream { return c.stmt(st) }
		switch {
		case i < len(stages)-1 || c.sc.opt("lastpipe") == off:
			out = c.isolated(run)
		case c.sc.opt("lastpipe") == on:
			out = run()
		default:
			out = c.branches(false, run, func() stream { return c.isolated(run) })
		}
	}
	return out
}

// loop runs a loop's passes until the state no longer changes: the first
// pass from the state before the loop, each later one from the join of
// the states the passes before started and ended in (bash may run the body
// any number of times). A pass calls exit where the loop may end (after a
// while loop's condition, before a for loop's item); the state after the
// loop is the join of those. more reports whether another pass reads more
// of the input (a while read loop's next line), which the join leaves
// where the reads left it.
func (c *checker) loop(pass func(k int, exit func()) (stream, bool)) stream {
	var exits []world
	exit := func() {
		w := c.save()
		w.leaves &^= leaveLoop
		exits = append(exits, w)
	}
	var out stream
	prev := c.save()
	for k := 0; c.b.err == nil; k++ {
		c.leaves = 0
		s, more := pass(k, exit)
		out = c.cat(out, s)
		if c.leaves&leaveLoop != 0 {
			exit() // a break may have ended it here
		}
		end := c.save()
		end.leaves &^= leaveLoop
		c.merge(prev, end)
		c.in = end.in
		c.in.seek(end.inPos)
		next := c.save()
		if !more && k > 0 && sameWorld(prev, next) {
			break
		}
		if k >= maxPasses {
			c.sc.havoc()
			exits = append(exits, c.save())
			break
		}
		prev = next
	}
	c.merge(exits...)
	c.leaves &^= leaveLoop
	return inexact(out)
}

// maxPasses bounds how often a loop's body is run to find what it may
// leave; a loop that still changes the state then is taken to leave
// anything.
const maxPasses = 8

// sameWorld reports whether two states hold the same values (the loop
// reached a state another pass does not change).
func sameWorld(a, b world) bool {
	return maps.Equal(a.sc.vars, b.sc.vars) && maps.Equal(a.sc.cleared, b.sc.cleared) &&
		maps.EqualFunc(a.sc.arrays, b.sc.arrays, func(x, y *array) bool { return x.equal(y) }) &&
		maps.Equal(a.sc.refs, b.sc.refs) && maps.Equal(a.sc.exported, b.sc.exported) && maps.Equal(a.sc.attrs, b.sc.attrs) &&
		maps.Equal(a.sc.funcs, b.sc.funcs) && maps.Equal(a.sc.aliases, b.sc.aliases) && maps.Equal(a.sc.unsure, b.sc.unsure) &&
		maps.Equal(a.sc.hashed, b.sc.hashed) && slices.Equal(a.sc.pos, b.sc.pos) && maps.Equal(a.sc.opts, b.sc.opts) &&
		a.sc.cwd == b.sc.cwd && a.sc.cwdLost == b.sc.cwdLost && a.sc.lost == b.sc.lost && a.sc.arg0 == b.sc.arg0 &&
		a.sc.echoEsc == b.sc.echoEsc && maps.Equal(a.sc.disabled, b.sc.disabled) && a.sc.allExport == b.sc.allExport && len(a.sc.traps) == len(b.sc.traps) &&
		maps.EqualFunc(a.files, b.files, func(x, y file) bool { return x == y }) && len(a.fds) == len(b.fds)
}

// while runs a while/until loop: the condition runs at least once, the
// body on the paths where it holds; a read in the condition takes the
// next line on each pass.
func (c *checker) while(x *syntax.WhileClause) stream {
	onlyRead := !x.Until && len(x.Cond) == 1 && readsOnly(x.Cond[0])
	return c.loop(func(k int, exit func()) (stream, bool) {
		before := c.in.consumed()
		atEnd := c.in.empty()
		out := c.stmts(x.Cond)
		exit()
		if onlyRead && atEnd {
			// read fails at the end of the input: the body does not run.
			return out, false
		}
		out = c.cat(out, c.stmts(x.Do))
		return out, c.in.consumed() != before && !c.in.empty() && k < maxIterations
	})
}

// readsOnly reports whether st is a plain read of the standard input (no
// -u, no redirection), which fails at the end of the input.
func readsOnly(st *syntax.Stmt) bool {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || len(st.Redirs) > 0 || len(call.Args) == 0 || call.Args[0].Lit() != "read" {
		return false
	}
	for _, a := range call.Args[1:] {
		if strings.HasPrefix(a.Lit(), "-") && strings.ContainsAny(a.Lit(), "ut") {
			return false
		}
	}
	return true
}

// forLoop runs the body once per item. Items the analysis knows, up to
// maxIterations of them, run in order, each from the state the one before
// left; otherwise the body is a loop's that may run any number of times
// with any of the items.
func (c *checker) forLoop(x *syntax.ForClause) stream {
	switch l := x.Loop.(type) {
	case *syntax.WordIter:
		var items []string
		if l.InPos.IsValid() {
			items = c.fields(l.Items...)
		} else {
			items = slices.Clone(c.sc.pos)
		}
		name := l.Name.Value
		if len(items) <= maxIterations && !slices.ContainsFunc(items, func(it string) bool { return strings.ContainsRune(it, markSplit) }) {
			var out stream
			var exits []world
			for _, it := range items {
				if c.b.err != nil {
					break
				}
				c.setVar(name, it)
				out = c.cat(out, c.stmts(x.Do))
				if c.leaves&leaveLoop != 0 {
					// A break may have ended the loop here.
					w := c.save()
					w.leaves &^= leaveLoop
					exits = append(exits, w)
					c.leaves &^= leaveLoop
				}
			}
			if len(exits) > 0 {
				c.merge(append(exits, c.save())...)
				return inexact(out)
			}
			return out
		}
		return c.loop(func(k int, exit func()) (stream, bool) {
			exit()
			switch {
			case k < len(items) && k < maxIterations:
				c.setVar(name, items[k])
			default:
				v := string(markExternal)
				for _, it := range items[min(k, len(items)):] {
					v = joinValue(v, it)
				}
				c.setVar(name, v)
			}
			return c.stmts(x.Do), k < len(items)-1
		})
	case *syntax.CStyleLoop:
		c.arith(l.Init)
		return c.loop(func(_ int, exit func()) (stream, bool) {
			c.arith(l.Cond)
			exit()
			out := c.stmts(x.Do)
			c.arith(l.Post)
			return out, false
		})
	}
	return nil
}

// define records a function and analyses its body as it stands, with
// unknown arguments, in a copy of the shell that is thrown away:
// something the guard cannot see may call it (a trap, a dynamic name,
// command_not_found_handle). Only a call changes the shell.
func (c *checker) define(x *syntax.FuncDecl) {
	if x.Name == nil || x.Body == nil {
		return
	}
	name := x.Name.Value
	f := &function{body: x.Body, aliases: c.view}
	if old := c.sc.funcs[name]; old == nil || old.body != x.Body {
		c.deferred(func() {
			c.sc.pos = []string{unknownFields}
			c.withVia([]string{"function " + name}, func() { c.stmt(x.Body) })
		})
	}
	c.sc.funcs[name] = f
	delete(c.sc.unsure, name)
}

// deferred analyses code where it is defined, in a world that is thrown
// away afterwards: a function body, an alias value, a trap's action.
func (c *checker) deferred(fn func()) {
	saved := c.save()
	savedView := c.view
	c.defined++
	fn()
	c.defined--
	c.restore(saved)
	c.view = savedView
}

// withVia runs fn with via pushed.
func (c *checker) withVia(via []string, fn func()) {
	saved := c.via
	c.via = append(slices.Clip(c.via), via...)
	fn()
	c.via = saved
}

// callFunc runs a function the command defined, with args as its
// positional parameters and the current standard input. Its local
// variables are restored when it returns.
func (c *checker) callFunc(name string, args []string) stream {
	f := c.sc.funcs[name]
	if c.callDepth >= MaxDepth {
		// Deeper calls run the same bodies (already read) with arguments
		// the analysis no longer follows.
		c.unreadable(name, "function "+name+" calls functions more than "+strconv.Itoa(MaxDepth)+" levels deep, beyond what toolhost follows")
		c.sc.havoc()
		return nil
	}
	c.calls++
	if c.calls > maxCalls {
		c.b.over(fmt.Sprintf("the command makes more than %d shell function calls", maxCalls))
		return nil
	}
	saved := c.sc.pos
	c.sc.pos = args
	c.sc.frames = append(c.sc.frames, map[string]binding{})
	c.callDepth++
	savedView := c.view
	c.view = f.aliases
	leaves := c.leaves
	c.leaves = 0
	var out stream
	c.withVia([]string{"function " + name}, func() { out = c.stmt(f.body) })
	c.callDepth--
	c.view = savedView
	c.leaves = leaves | c.leaves&^(leaveReturn|leaveLoop)
	if n := len(c.sc.frames); n > 0 {
		for v, b := range c.sc.frames[n-1] {
			c.sc.restoreBinding(v, b)
		}
		c.sc.frames = c.sc.frames[:n-1]
	}
	c.sc.pos = saved
	return out
}

// bindingOf is name as a local variable hides it.
func (s *scope) bindingOf(name string) binding {
	v, set := s.vars[name]
	b := binding{val: v, set: set, cleared: s.cleared[name], attrs: s.attrs[name], exported: s.exported[name]}
	if a, ok := s.arrays[name]; ok {
		b.arr = a.clone()
	}
	return b
}

func (s *scope) restoreBinding(name string, b binding) {
	delete(s.vars, name)
	delete(s.cleared, name)
	delete(s.arrays, name)
	delete(s.attrs, name)
	delete(s.exported, name)
	if b.set {
		s.vars[name] = b.val
	}
	if b.cleared {
		s.cleared[name] = true
	}
	if b.arr != nil {
		s.arrays[name] = b.arr
	}
	if b.attrs != "" {
		s.attrs[name] = b.attrs
	}
	if b.exported != off {
		s.exported[name] = b.exported
	}
}

// local makes name local to the function call in progress.
func (c *checker) local(name string) {
	n := len(c.sc.frames)
	if n == 0 {
		return
	}
	if _, ok := c.sc.frames[n-1][name]; !ok {
		c.sc.frames[n-1][name] = c.sc.bindingOf(name)
		// A new local starts unset, without the attributes it hid.
		delete(c.sc.vars, name)
		delete(c.sc.arrays, name)
		delete(c.sc.attrs, name)
		c.sc.cleared[name] = true
	}
}

// decl applies declare/local/export/readonly/typeset/nameref.
func (c *checker) decl(d *syntax.DeclClause) {
	variant := d.Variant.Value
	flags := declFlags(d)
	// A quoted or computed operand (declare 'x=1', declare "$v", declare
	// $o): bash reads its expansion as NAME=VALUE, a name or an option.
	dynamic := map[int][]string{}
	for i, a := range d.Args {
		if a.Name != nil || !a.Naked || a.Value == nil || isFlagWord(a.Value) {
			continue
		}
		fs := c.fields(a.Value)
		for _, f := range fs {
			switch {
			case hasMarks(strings.SplitN(f, "=", 2)[0]):
				// Which variable, or which option, is only known when
				// the command runs.
				c.sc.havoc()
				return
			case strings.HasPrefix(f, "-"):
				flags += f[1:]
			case strings.HasPrefix(f, "+"):
				flags += "+" + f[1:]
			}
		}
		dynamic[i] = fs
	}
	if !c.declares(variant, flags) {
		return
	}
	for i, a := range d.Args {
		if a.Name == nil {
			for _, f := range dynamic[i] {
				if !strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "+") {
					c.declFields(variant, append(flagFields(flags), f))
				}
			}
			continue
		}
		name := a.Name.Value
		c.declName(variant, flags, name)
		switch {
		case strings.Contains(flags, "f") || strings.Contains(flags, "F"):
			if strings.Contains(flags, "x") || variant == "export" {
				c.sc.exportedFuncs[name] = on
			}
			continue
		case strings.Contains(flags, "n"):
			switch {
			case !a.Naked && a.Value != nil:
				if target := c.literal(a.Value); target != "" && target != name {
					c.sc.refs[name] = target
				}
			case a.Naked:
				if _, ok := c.sc.refs[name]; !ok {
					// A reference to nothing yet: its first
					// assignment names its target.
					c.sc.refs[name] = ""
				}
			}
			continue
		case strings.Contains(flags, "A"):
			c.array(name, true)
		case strings.Contains(flags, "a"):
			c.array(name, false)
		}
		if !a.Naked {
			c.assign1(a)
		}
		c.readonlyAfter(variant, flags, name)
	}
}

// readonlyAfter makes name readonly once its declaration assigned it
// (readonly x=1, declare -r x=1).
func (c *checker) readonlyAfter(variant, flags, name string) {
	name, _, _ = strings.Cut(name, "[")
	if (variant == "readonly" || strings.Contains(strings.SplitN(flags, "+", 2)[0], "r")) && !strings.ContainsRune(c.sc.attrs[name], 'r') {
		c.sc.attrs[name] += "r"
	}
}

// declares reports whether a declare-like builtin changes variables (it
// does not with -p, and local does nothing outside a function).
func (c *checker) declares(variant, flags string) bool {
	switch {
	case strings.Contains(flags, "p"):
		return false
	case variant == "local" && len(c.sc.frames) == 0:
		return false // bash: local: can only be used in a function
	}
	return true
}

// declName applies what declaring name does besides assigning: it may
// make the name local, exported or give it attributes.
func (c *checker) declName(variant, flags, name string) {
	name, _, _ = strings.Cut(name, "[")
	if (variant == "local" || variant == "declare" || variant == "typeset") && !strings.Contains(flags, "g") && !strings.Contains(flags, "f") && !strings.Contains(flags, "F") {
		c.local(name)
	}
	if variant == "export" || strings.Contains(flags, "x") {
		c.sc.exported[name] = on
	}
	if strings.Contains(flags, "+x") {
		c.sc.exported[name] = off
	}
	attrs := c.sc.attrs[name]
	for _, ch := range "luci" {
		if strings.ContainsRune(flags, ch) && !strings.ContainsRune(attrs, ch) {
			attrs += string(ch)
		}
	}
	if attrs != "" {
		c.sc.attrs[name] = attrs
	}
}

// isFlagWord reports whether w is an option of declare as written: a
// literal word starting with - or +.
func isFlagWord(w *syntax.Word) bool {
	f := w.Lit()
	return f != "" && (strings.HasPrefix(f, "-") || strings.HasPrefix(f, "+"))
}

// flagFields gives declare's option letters (declFlags) back as option
// words: "n+x" is -n +x.
func flagFields(flags string) []string {
	minus, plus, hasPlus := strings.Cut(flags, "+")
	var out []string
	if minus != "" {
		out = append(out, "-"+minus)
	}
	if hasPlus {
		out = append(out, "+"+plus)
	}
	return out
}

// declFlags returns the option letters of a declare/local/typeset (-n, -A
// …); a +x is kept as "+x".
func declFlags(d *syntax.DeclClause) string {
	var flags strings.Builder
	for _, a := range d.Args {
		if a.Naked && a.Value != nil {
			f := a.Value.Lit()
			switch {
			case strings.HasPrefix(f, "-"):
				flags.WriteString(f[1:])
			case strings.HasPrefix(f, "+"):
				flags.WriteString("+" + f[1:])
			}
		}
	}
	return flags.String()
}

// assign records variable assignments; export marks them exported (a
// command's environment).
func (c *checker) assign(as []*syntax.Assign, export bool) {
	for _, a := range as {
		if a.Name == nil {
			continue
		}
		if export || c.sc.allExport == on {
			c.sc.exported[a.Name.Value] = on
		} else if c.sc.allExport == unsure && c.sc.exported[a.Name.Value] == off {
			c.sc.exported[a.Name.Value] = unsure
		}
		if !a.Naked {
			c.assign1(a)
		}
	}
}

// assign1 applies one NAME=value, NAME+=value, NAME[i]=value or
// NAME=(…).
func (c *checker) assign1(a *syntax.Assign) {
	name := a.Name.Value
	switch {
	case a.Array != nil:
		c.assignArray(a)
		return
	case a.Index != nil:
		c.arith(a.Index)
		val := ""
		if a.Value != nil { // B[3]= assigns the empty string
			val = c.literal(a.Value)
		}
		c.array(name, false).set(c, a.Index, c.attributed(name, val))
		return
	}
	val := ""
	if a.Value != nil {
		val = c.literal(a.Value)
	}
	if a.Append {
		val = c.value(name) + val
		if !c.b.text(len(val)) {
			return
		}
	}
	c.setVar(name, val)
}

// value is what $name expands to, as the analysis knows it.
func (c *checker) value(name string) string {
	v := env{c}.Get(name)
	for range 16 {
		if v.Kind != expand.NameRef {
			break
		}
		// A reference's value is its target's (r+=x appends to it).
		v = env{c}.Get(v.Str)
	}
	if v.Kind == expand.NameRef {
		return string(markExternal)
	}
	return v.String()
}

// setVar sets a scalar, as bash would with the variable's attributes.
func (c *checker) setVar(name, val string) {
	if name == "" {
		return
	}
	if t, ok := c.sc.refs[name]; ok {
		if t == "" {
			// declare -n r without a target: the first assignment to r
			// names the variable r refers to.
			c.sc.refs[name] = val
			return
		}
		name = t
		if base, _, indexed := strings.Cut(t, "["); indexed {
			// A reference to an element (declare -n r='a[…]'): bash
			// evaluates the subscript on each assignment through it.
			c.nameSubscript(t)
			c.array(base, false).forget()
			return
		}
	}
	if hasMarks(name) {
		// A name only known when the command runs: any variable may be
		// the one assigned.
		c.sc.havoc()
		return
	}
	if strings.ContainsRune(c.sc.attrs[name], 'r') {
		return // bash refuses to assign a readonly variable
	}
	c.shellTable(name)
	val = c.attributed(name, val)
	if !c.b.text(len(val)) {
		return
	}
	if a, ok := c.sc.arrays[name]; ok {
		// NAME=value on an array sets element 0.
		a.put("0", val)
		return
	}
	c.sc.vars[name] = val
	delete(c.sc.cleared, name)
	switch name {
	case "PATH":
		// Assigning PATH empties bash's table of hashed paths (hash -p
		// included).
		clear(c.sc.hashed)
	case "POSIXLY_CORRECT":
		c.sc.opts["posix"] = on
	}
	c.hook(name, val)
}

// shellTable notes an assignment to BASH_ALIASES or BASH_CMDS, which
// define aliases and hashed paths: any command name may now run something
// else.
func (c *checker) shellTable(name string) {
	if name == "BASH_ALIASES" || name == "BASH_CMDS" {
		c.sc.lost = true
	}
}

// attributed is the value a variable with attributes holds when val is
// assigned to it: declare -l, -u, -c change the case, -i evaluates it;
// the analysis does not redo that, so the value is not known.
func (c *checker) attributed(name, val string) string {
	attrs := c.sc.attrs[name]
	if attrs == "" || attrs == "r" {
		return val
	}
	if strings.ContainsAny(attrs, "i") {
		c.arithValue(val, "a declare -i value", 0)
		return string(markExternal)
	}
	if strings.ContainsAny(attrs, "luc?") {
		return joinValue(val, string(markExternal))
	}
	return val
}

// setPositional sets $1 … and $#.
func (c *checker) setPositional(args []string) { c.sc.pos = slices.Clone(args) }

// posVar returns a positional or special parameter, and whether name is
// one.
func (c *checker) posVar(name string) (string, bool) {
	switch name {
	case "#":
		if slices.ContainsFunc(c.sc.pos, func(p string) bool { return strings.ContainsRune(p, markSplit) }) {
			return string(markExternal), true
		}
		return strconv.Itoa(len(c.sc.pos)), true
	case "0":
		return c.sc.arg0, true
	case "@", "*":
		return strings.Join(c.sc.pos, " "), true
	}
	if name == "" || name[0] < '1' || name[0] > '9' {
		return "", false
	}
	if n, err := strconv.Atoi(name); err == nil {
		for i, p := range c.sc.pos {
			if strings.ContainsRune(p, markSplit) && i < n {
				return unknownFields, true // which word is $n is not known
			}
		}
		if n <= len(c.sc.pos) {
			return c.sc.pos[n-1], true
		}
		return "", true
	}
	return "", false
}

// unknownCode records shell code the guard cannot read; it runs in a
// shell, so it is refused.
func (c *checker) unknownCode(what, reason, instead string) {
	c.unknown(Unknown{Kind: UnknownCode, What: shown(what), Reason: reason, Instead: instead, ReachesShell: true})
}

// unreadable records code the analysis cannot read that runs without
// reaching the guard's concerns (a script file on disk, a start-up file):
// what it runs is not known, but it is not inline JSON of the command.
func (c *checker) unreadable(what, reason string) {
	c.unknown(Unknown{Kind: UnknownCode, What: shown(what), Reason: reason})
}

func (c *checker) unknown(u Unknown) {
	u.Line, u.Col = c.line, c.col
	for _, have := range c.a.Unknowns {
		if have == u {
			return
		}
	}
	c.a.Unknowns = append(c.a.Unknowns, u)
}

// record adds a command to the facts and returns its index.
func (c *checker) record(cmd Command) int {
	cmd.Via = slices.Clone(c.via)
	cmd.Line, cmd.Col = c.line, c.col
	cmd.Defined = c.defined > 0
	cmd.Stdin = c.in.describe()
	if c.redirs != nil {
		cmd.Redirects, c.redirs = c.redirs, nil
	}
	if len(c.a.Commands) >= MaxCommands {
		c.b.over(fmt.Sprintf("the command runs more than %d commands", MaxCommands))
		c.a.Commands = c.a.Commands[:len(c.a.Commands)-1]
	}
	c.a.Commands = append(c.a.Commands, cmd)
	return len(c.a.Commands) - 1
}

// finishTraps analyses the traps of the shell that ends now: each runs
// with any state the shell passed through after it was set (an EXIT trap
// when the shell ends, which may be before any statement; any other when
// its event comes).
func (c *checker) finishTraps() {
	traps := c.sc.traps
	c.sc.traps = nil
	c.mayEnd()
	states := c.sc.trapped
	for _, t := range traps {
		c.deferredRun(func() {
			if states != nil && states.w != nil {
				// Any state the shell passed through since the trap
				// was set.
				c.restore(*states.w)
			} else {
				c.sc.havoc()
			}
			c.code(t.code, "trap", []string{"trap " + t.on}, -1)
		})
	}
}

// deferredRun is deferred for code that runs later rather than code that
// is only defined: its commands are not marked as defined.
func (c *checker) deferredRun(fn func()) {
	saved := c.save()
	savedView := c.view
	fn()
	c.restore(saved)
	c.view = savedView
}
