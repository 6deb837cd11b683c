package bashguard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// scope is the state a shell keeps: variables, functions, aliases, the
// positional parameters. eval, source and function calls share their
// caller's scope; a child shell (bash -c, bash script) starts from the
// exported variables only.
type scope struct {
	vars map[string]string
	// arrays are the arrays the command assigns (B=(x '{…}'), B[3]=…,
	// declare -A), refs the namerefs it declares (declare -n r=x).
	arrays    map[string]*array
	refs      map[string]string
	exported  map[string]bool
	allExport bool
	funcs     map[string]*syntax.Stmt
	// exportedFuncs are the functions export -f passes to child shells.
	exportedFuncs map[string]bool
	aliases       map[string]string
	// hashed are hash -p PATH NAME entries: NAME runs PATH.
	hashed map[string]string
	pos    []string // $1 …
	arg0   string   // $0
	// posix is true for sh/dash, whose echo decodes backslash escapes.
	posix bool
}

func newScope() *scope {
	return &scope{vars: map[string]string{}, arrays: map[string]*array{}, refs: map[string]string{},
		exported: map[string]bool{}, funcs: map[string]*syntax.Stmt{}, exportedFuncs: map[string]bool{}, aliases: map[string]string{},
		hashed: map[string]string{}, arg0: "bash"}
}

// child is the scope of a new shell process started from s.
func (s *scope) child(shell string) *scope {
	n := newScope()
	for name, v := range s.vars {
		if s.exported[name] || s.allExport {
			n.vars[name], n.exported[name] = v, true
		}
	}
	for name := range s.exportedFuncs {
		if body, ok := s.funcs[name]; ok {
			n.funcs[name], n.exportedFuncs[name] = body, true
		}
	}
	n.arg0 = shell
	n.posix = shell == "sh" || shell == "dash" || shell == "ash"
	return n
}

// checker holds the state of one analysis.
type checker struct {
	a  *Analysis
	b  *budget
	sc *scope
	// in is the standard input of the statement being run.
	in *reader
	// files are the files this command writes (path → what it writes),
	// read back only when the command runs one as a script.
	files map[string]string
	// fds are what a path such as /dev/fd/3 or a process substitution's
	// /dev/fd/63 reads: exec 3<<<'…', <(…).
	fds map[string]stream
	// outProcs are the >(…) process substitutions of the statement being
	// run, by path, not yet fed.
	outProcs map[string]*syntax.ProcSubst
	nextFD   int
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
	inAlias   map[string]bool
	loopDepth int
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
}

func newChecker() *checker {
	return &checker{a: &Analysis{}, b: newBudget(), sc: newScope(), in: &reader{}, files: map[string]string{},
		fds: map[string]stream{}, outProcs: map[string]*syntax.ProcSubst{}, nextFD: 63, inAlias: map[string]bool{}}
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
	savedSrc, savedVia := c.src, c.via
	c.src = src
	c.via = append(slices.Clip(c.via), via...)
	c.depth++
	out := c.stmts(f.Stmts, c.depth == 1)
	c.depth--
	c.src, c.via = savedSrc, savedVia
	return out
}

// stmts runs a statement list; top is true for the statements of the
// command as given, whose positions the facts carry.
func (c *checker) stmts(list []*syntax.Stmt, top bool) stream {
	var out stream
	for _, st := range list {
		if c.b.err != nil {
			return out
		}
		if top {
			c.line, c.col = int(st.Pos().Line()), int(st.Pos().Col())
		}
		out = c.cat(out, c.stmt(st))
	}
	return out
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
	path string // a file, /dev/tcp/…, or a >(…) path
	none bool   // to stderr or closed: nothing reaches the pipe
	in   *reader
}

// stmt runs one statement with its redirections and returns what reaches
// its standard output.
func (c *checker) stmt(st *syntax.Stmt) stream {
	if !c.b.step() {
		return nil
	}
	savedIn, savedRedirs, gen := c.in, c.redirs, c.execGen
	defer func() {
		if c.execGen != gen {
			savedIn = c.in // exec < …: the shell's input from now on
		}
		c.in, c.redirs = savedIn, savedRedirs
	}()
	c.redirs = nil
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
	if !hasMarks(target.path) {
		c.files[target.path] = out.value()
	}
	return nil
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
		text := strings.Join(c.fields(r.Word), " ") + "\n"
		rec.Target = shown(text)
		c.input(target, fd, stream{{text: text, via: "a here-string"}})
	case syntax.RdrIn, syntax.RdrInOut:
		path := c.word(r.Word)
		rec.Target = shown(path)
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
		if fd == "" || fd == "1" || r.Op == syntax.RdrAll || r.Op == syntax.AppAll || r.Op == syntax.RdrAllClob || r.Op == syntax.AppAllClob {
			target.path, target.none = path, false
		}
	case syntax.DplOut:
		w := c.word(r.Word)
		rec.Target = shown(w)
		if fd == "" || fd == "1" {
			switch w {
			case "1":
			case "-":
				target.none = true
			default:
				target.path, target.none = "", true
			}
		}
	}
	c.redirs = append(c.redirs, rec)
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
		if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
			return c.pipeline(x)
		}
		out := c.stmt(x.X)
		return c.cat(out, c.stmt(x.Y))
	case *syntax.Block:
		return c.stmts(x.Stmts, false)
	case *syntax.Subshell:
		return c.stmts(x.Stmts, false)
	case *syntax.IfClause:
		var out stream
		for cl := x; cl != nil; cl = cl.Else {
			out = c.cat(out, c.stmts(cl.Cond, false))
			out = c.cat(out, c.stmts(cl.Then, false))
		}
		return out
	case *syntax.WhileClause:
		return c.while(x)
	case *syntax.ForClause:
		return c.forLoop(x)
	case *syntax.CaseClause:
		c.word(x.Word)
		var out stream
		for _, item := range x.Items {
			for _, p := range item.Patterns {
				c.word(p)
			}
			out = c.cat(out, c.stmts(item.Stmts, false))
		}
		return out
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
			return c.stmt(x.Stmt)
		}
	}
	return nil
}

// pipeline runs each stage with the previous stage's output as its
// standard input.
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
	var out stream
	for i, st := range stages {
		if i > 0 {
			c.in = &reader{segs: out}
		}
		out = c.stmt(st)
	}
	return out
}

// while runs a while/until loop: the condition and body once per line of
// input a read in the condition consumes (up to maxIterations), at least
// once.
func (c *checker) while(x *syntax.WhileClause) stream {
	var out stream
	c.loopDepth++
	defer func() { c.loopDepth-- }()
	for i := 0; i < maxIterations && c.b.err == nil; i++ {
		before := c.in.consumed()
		out = c.cat(out, c.stmts(x.Cond, false))
		out = c.cat(out, c.stmts(x.Do, false))
		if c.in.consumed() == before || c.in.empty() || c.loopDepth > 2 {
			break
		}
	}
	return out
}

// forLoop runs the body once per item (distinct items, up to
// maxIterations; the rest share one run with the last).
func (c *checker) forLoop(x *syntax.ForClause) stream {
	c.loopDepth++
	defer func() { c.loopDepth-- }()
	switch l := x.Loop.(type) {
	case *syntax.WordIter:
		var items []string
		if l.InPos.IsValid() {
			items = c.fields(l.Items...)
		} else {
			items = slices.Clone(c.sc.pos)
		}
		items = slices.Compact(items)
		if len(items) == 0 {
			items = []string{""}
		}
		if c.loopDepth > 2 {
			items = items[:1]
		}
		var out stream
		for i, it := range items {
			if i == maxIterations-1 {
				c.setVar(l.Name.Value, items[i:])
			} else {
				c.sc.vars[l.Name.Value] = it
			}
			out = c.cat(out, c.stmts(x.Do, false))
			if i == maxIterations-1 || c.b.err != nil {
				break
			}
		}
		return out
	case *syntax.CStyleLoop:
		c.arith(l.Init)
		c.arith(l.Cond)
		c.arith(l.Post)
	}
	return c.stmts(x.Do, false)
}

// define records a function and analyses its body as it stands, with
// unknown arguments: something the guard cannot see may call it (a trap,
// a dynamic name, command_not_found_handle).
func (c *checker) define(x *syntax.FuncDecl) {
	if x.Name == nil || x.Body == nil {
		return
	}
	name := x.Name.Value
	if c.sc.funcs[name] == nil {
		c.defined++
		saved := c.sc.pos
		c.sc.pos = []string{string(markExternal)}
		c.withVia([]string{"function " + name}, func() { c.stmt(x.Body) })
		c.sc.pos = saved
		c.defined--
	}
	c.sc.funcs[name] = x.Body
}

// withVia runs fn with via pushed.
func (c *checker) withVia(via []string, fn func()) {
	saved := c.via
	c.via = append(slices.Clip(c.via), via...)
	fn()
	c.via = saved
}

// callFunc runs a function the command defined, with args as its
// positional parameters and the current standard input.
func (c *checker) callFunc(name string, args []string) stream {
	if c.callDepth >= MaxDepth {
		return nil
	}
	c.calls++
	if c.calls > maxCalls {
		c.b.over(fmt.Sprintf("the command makes more than %d shell function calls", maxCalls))
		return nil
	}
	saved := c.sc.pos
	c.sc.pos = args
	c.callDepth++
	var out stream
	c.withVia([]string{"function " + name}, func() { out = c.stmt(c.sc.funcs[name]) })
	c.callDepth--
	c.sc.pos = saved
	return out
}

// decl applies declare/local/export/readonly/typeset/nameref.
func (c *checker) decl(d *syntax.DeclClause) {
	flags := declFlags(d)
	export := d.Variant.Value == "export" || strings.Contains(flags, "x")
	switch {
	case strings.Contains(flags, "n"):
		c.nameRefs(d.Args)
	case strings.Contains(flags, "A"):
		for _, a := range d.Args {
			if a.Name != nil {
				c.array(a.Name.Value, true)
			}
		}
		c.assign(d.Args, export)
	case strings.Contains(flags, "f") && export:
		for _, a := range d.Args {
			if a.Name != nil {
				c.sc.exportedFuncs[a.Name.Value] = true
			}
		}
	default:
		c.assign(d.Args, export)
	}
	if strings.Contains(flags, "i") {
		for _, a := range d.Args {
			if a.Value != nil {
				c.arithWord(a.Value)
			}
		}
	}
}

// declFlags returns the option letters of a declare/local/typeset (-n, -A …).
func declFlags(d *syntax.DeclClause) string {
	var flags strings.Builder
	for _, a := range d.Args {
		if a.Naked && a.Value != nil {
			if f := a.Value.Lit(); strings.HasPrefix(f, "-") {
				flags.WriteString(f[1:])
			}
		}
	}
	return flags.String()
}

// nameRefs records declare -n r=x: r then expands to whatever x holds.
func (c *checker) nameRefs(as []*syntax.Assign) {
	for _, a := range as {
		if a.Name == nil || a.Naked || a.Value == nil {
			continue
		}
		if target := c.word(a.Value); target != "" && target != a.Name.Value {
			c.sc.refs[a.Name.Value] = target
		}
	}
}

// assign records variable assignments.
func (c *checker) assign(as []*syntax.Assign, export bool) {
	for _, a := range as {
		if a.Name == nil {
			continue
		}
		name := a.Name.Value
		if export || c.sc.allExport {
			c.sc.exported[name] = true
		}
		if a.Naked {
			continue
		}
		switch {
		case a.Array != nil:
			c.assignArray(a)
			continue
		case a.Index != nil:
			c.arith(a.Index)
			val := ""
			if a.Value != nil { // B[3]= assigns the empty string
				val = c.word(a.Value)
			}
			c.array(name, false).set(c, a.Index, val)
			continue
		}
		val := ""
		if a.Value != nil {
			val = c.word(a.Value)
		}
		if a.Append {
			val = c.sc.vars[name] + val
			if !c.b.text(len(val)) {
				return
			}
		}
		c.setVar(name, []string{val})
	}
}

// setVar sets a scalar. Of several candidate values (a loop's items), the
// one that holds JSON or text the guard cannot follow wins, and such a
// value sticks to its name: the guard does not know which branch of the
// command ran, so a later harmless assignment must not hide it.
func (c *checker) setVar(name string, vals []string) {
	if name == "" {
		return
	}
	if t, ok := c.sc.refs[name]; ok {
		name = t
	}
	if sticky(c.sc.vars[name]) {
		return
	}
	val := ""
	if len(vals) > 0 {
		val = vals[len(vals)-1]
	}
	for _, v := range vals {
		if sticky(v) {
			val = v
			break
		}
	}
	if !c.b.text(len(val)) {
		return
	}
	c.sc.vars[name] = val
}

// sticky reports whether a value must not be overwritten.
func sticky(v string) bool {
	return v != "" && (isJSONValue(v) || strings.ContainsAny(v, string(markDerived)+string(markJSON)))
}

// setPositional sets $1 … and $#.
func (c *checker) setPositional(args []string) { c.sc.pos = slices.Clone(args) }

// posVar returns a positional or special parameter, and whether name is
// one.
func (c *checker) posVar(name string) (string, bool) {
	switch name {
	case "#":
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
