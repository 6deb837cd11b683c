package bashguard

import (
	"fmt"
	"io"
	"iter"
	"maps"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Limits of the guard.
const (
	// MaxCommandLen is the longest command checked, in bytes.
	MaxCommandLen = 64 << 10
	// MaxDepth is how many times a string may be re-parsed as a script
	// (bash -c inside eval inside bash -c …).
	MaxDepth = 8
	// maxFields caps the words expansion may produce in one check, so
	// brace ranges such as {1..999999999} cannot exhaust memory.
	maxFields = 100_000
	// maxSubstDepth caps how deep command substitutions are followed while
	// expanding a word.
	maxSubstDepth = 16
)

// Check returns nil when command may run, or a *Error saying why not and
// what to run instead.
func Check(command string) error {
	if len(command) > MaxCommandLen {
		return &Error{Kind: ErrTooLong, Detail: fmt.Sprintf("the command is %d bytes, over the %d-byte limit", len(command), MaxCommandLen)}
	}
	c := &checker{vars: vars{}, arrays: map[string]*array{}, refs: map[string]string{},
		outputs: map[*syntax.Stmt]output{}, funcs: map[string]*syntax.Stmt{}}
	return c.script(command, 0)
}

// checker holds the state of one Check.
type checker struct {
	vars vars
	// arrays are the arrays the command assigns (B=(x '{…}'), B[3]=…,
	// B+=(…), declare -A), so that ${B[i]} expands to its element; refs the
	// namerefs it declares (declare -n r=x), which expand to the variable
	// they name.
	arrays     map[string]*array
	refs       map[string]string
	outputs    map[*syntax.Stmt]output
	fieldCount int
	substDepth int
	// budgetErr is set when expansion ran over its budget.
	budgetErr error
	// funcs are the shell functions the command defines, by name; a call
	// checks the body with the call's arguments as $1 ….
	funcs     map[string]*syntax.Stmt
	callDepth int
	calls     int
	// execInput is what an exec without a command opened on a file
	// descriptor (exec 3<<<'…'): any later command may read it.
	execInput []piece
}

// piece is text that reaches a command's standard input.
type piece struct {
	text string
	via  string // "a here-string", "a heredoc", "a pipe from echo" …
}

// output approximates what a statement prints: echo/printf arguments, jq -n
// filters and the heredocs and here-strings it reads.
type output struct {
	pieces []piece
	text   string
}

func (c *checker) script(src string, depth int) error {
	if depth > MaxDepth {
		return &Error{Kind: ErrTooComplex, Detail: fmt.Sprintf("bash -c/sh -c/eval strings are nested more than %d levels", MaxDepth)}
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return &Error{Kind: ErrUnparsable, Detail: err.Error()}
	}
	for _, st := range f.Stmts {
		if err := c.node(st, nil, depth); err != nil {
			return err
		}
	}
	return nil
}

// node checks every command in n. feed is what reaches the standard input
// of the commands in n from earlier stages of a pipeline.
func (c *checker) node(n syntax.Node, feed []piece, depth int) error {
	var err error
	syntax.Walk(n, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch x := n.(type) {
		case *syntax.BinaryCmd:
			if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
				err = c.pipeline(x, feed, depth)
				return false
			}
		case *syntax.Stmt:
			if call, ok := x.Cmd.(*syntax.CallExpr); ok {
				err = c.stmt(x, call, feed, depth)
			}
		case *syntax.DeclClause:
			switch flags := declFlags(x); {
			case strings.Contains(flags, "n"):
				c.nameRefs(x.Args)
			case strings.Contains(flags, "A"):
				for _, a := range x.Args {
					if a.Name != nil {
						c.array(a.Name.Value, true)
					}
				}
				c.assign(x.Args)
			default:
				c.assign(x.Args)
			}
		case *syntax.FuncDecl:
			// The body is also checked as it stands (walk goes on).
			if x.Name != nil && x.Body != nil {
				c.funcs[x.Name.Value] = x.Body
			}
		case *syntax.ForClause:
			if it, ok := x.Loop.(*syntax.WordIter); ok {
				c.setVar(it.Name.Value, c.fields(it.Items...))
			}
		}
		if err == nil {
			err = c.budgetErr
		}
		return err == nil
	})
	return err
}

// pipeline checks each stage, feeding it what the earlier stages print.
func (c *checker) pipeline(b *syntax.BinaryCmd, feed []piece, depth int) error {
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
	in := feed
	for _, st := range stages {
		if err := c.node(st, in, depth); err != nil {
			return err
		}
		in = append(in[:len(in):len(in)], c.output(st).pieces...)
	}
	return nil
}

func (c *checker) stmt(st *syntax.Stmt, call *syntax.CallExpr, feed []piece, depth int) error {
	c.assign(call.Assigns)
	if len(call.Args) == 0 {
		return nil
	}
	fields := c.fields(call.Args...)
	if len(fields) == 1 && program(fields[0]) == "exec" {
		c.execInput = append(c.execInput, c.stdin(st)...)
		return nil
	}
	input := append(c.stdin(st), feed...)
	input = append(input, c.execInput...)
	procs, err := c.procSubsts(st, call, input, depth)
	if err != nil {
		return err
	}
	return c.command(fields, append(input, procs...), depth)
}

// procSubsts returns what the <(…) process substitutions among a
// statement's arguments and redirections print (the command reads them as
// files: curl -d @<(echo …), < <(printf …)), and checks the commands of its
// >(…) substitutions with what the statement prints as their input.
func (c *checker) procSubsts(st *syntax.Stmt, call *syntax.CallExpr, input []piece, depth int) ([]piece, error) {
	words := append([]*syntax.Word(nil), call.Args...)
	for _, r := range st.Redirs {
		if r.Word != nil {
			words = append(words, r.Word)
		}
	}
	var out []piece
	for _, w := range words {
		for _, part := range w.Parts {
			ps, ok := part.(*syntax.ProcSubst)
			if !ok {
				continue
			}
			if ps.Op == syntax.CmdIn {
				for _, s := range ps.Stmts {
					out = append(out, piece{text: c.output(s).text, via: procVia})
				}
				continue
			}
			feed := append(input[:len(input):len(input)], c.output(st).pieces...)
			for _, s := range ps.Stmts {
				if err := c.node(s, feed, depth); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// stdin returns the heredocs and here-strings of a statement.
func (c *checker) stdin(st *syntax.Stmt) []piece {
	var out []piece
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				out = append(out, piece{text: c.document(r.Hdoc), via: "a heredoc"})
			}
		case syntax.WordHdoc:
			out = append(out, piece{text: strings.Join(c.fields(r.Word), " "), via: "a here-string"})
		}
	}
	return out
}

// output computes (once per statement) what st prints, as far as the guard
// can tell without running anything.
func (c *checker) output(st *syntax.Stmt) output {
	if o, ok := c.outputs[st]; ok {
		return o
	}
	var o output
	var texts []string
	syntax.Walk(st, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.Word); ok {
			// What a command substitution inside an argument prints is part
			// of that argument, not of this statement's output.
			return false
		}
		s, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		call, ok := s.Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		fields := c.fields(call.Args...)
		if len(fields) == 0 {
			return true
		}
		for _, p := range c.stdin(s) {
			o.pieces = append(o.pieces, p)
			texts = append(texts, p.text)
		}
		name := program(fields[0])
		switch name {
		case "echo":
			args := fields[1:]
			for len(args) > 0 && (args[0] == "-n" || args[0] == "-e" || args[0] == "-E" || args[0] == "-ne" || args[0] == "-en") {
				args = args[1:]
			}
			text := strings.Join(args, " ")
			o.pieces = append(o.pieces, piece{text: text, via: "a pipe from echo"})
			for _, a := range args {
				o.pieces = append(o.pieces, piece{text: a, via: "a pipe from echo"})
			}
			texts = append(texts, text)
		case "printf":
			args := fields[1:]
			if len(args) > 1 && args[0] == "--" {
				args = args[1:]
			}
			if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				text, _, err := expand.Format(c.cfg(), args[0], args[1:])
				if err != nil {
					text = strings.Join(args, " ")
				}
				o.pieces = append(o.pieces, piece{text: text, via: "a pipe from printf"})
				for _, a := range args[1:] {
					o.pieces = append(o.pieces, piece{text: a, via: "a pipe from printf"})
				}
				texts = append(texts, text)
			}
		case "jq", "gojq", "jaq":
			if nullInput(fields[1:]) {
				for _, a := range fields[1:] {
					if !strings.HasPrefix(a, "-") {
						o.pieces = append(o.pieces, piece{text: a, via: "a pipe from " + name + " -n"})
						texts = append(texts, a)
						break
					}
				}
			}
		}
		return true
	})
	o.text = strings.Join(texts, "\n")
	c.outputs[st] = o
	return o
}

// cmdSubst writes what a command substitution would print, as approximated
// by output; nothing is run.
func (c *checker) cmdSubst(w io.Writer, cs *syntax.CmdSubst) error {
	if c.substDepth >= maxSubstDepth {
		c.budgetErr = &Error{Kind: ErrTooComplex, Detail: fmt.Sprintf("command substitutions are nested more than %d levels", maxSubstDepth)}
		return nil
	}
	c.substDepth++
	defer func() { c.substDepth-- }()
	texts := make([]string, 0, len(cs.Stmts))
	for _, st := range cs.Stmts {
		texts = append(texts, c.output(st).text)
	}
	_, err := io.WriteString(w, strings.Join(texts, "\n"))
	return err
}

// cfg returns a fresh expansion config: an expand.Config keeps scratch
// buffers, so the nested expansions a command substitution triggers must not
// share one.
func (c *checker) cfg() *expand.Config {
	return &expand.Config{Env: env{c}, CmdSubst: c.cmdSubst, ProcSubst: procSubst}
}

// procPath is the file name a process substitution expands to, and procVia
// how its output is named in a rejection.
const (
	procPath = "/dev/fd/63"
	procVia  = "a process substitution"
)

func procSubst(*syntax.ProcSubst) (string, error) { return procPath, nil }

// fields expands words as arguments (quote removal, $'…', variables,
// approximated command substitutions; no globbing), falling back to a
// plain reading of the word when expansion fails.
func (c *checker) fields(words ...*syntax.Word) []string {
	var out []string
	for _, w := range words {
		var got []string
		var failed bool
		for f, err := range expand.FieldsSeq(c.cfg(), w) {
			if err != nil {
				failed = true
				break
			}
			c.fieldCount++
			if c.fieldCount > maxFields {
				c.budgetErr = &Error{Kind: ErrTooComplex, Detail: fmt.Sprintf("the command expands to more than %d words", maxFields)}
				return out
			}
			got = append(got, f)
		}
		if failed {
			got = []string{c.plain(w.Parts)}
		} else if hasQuotedDefault(w) {
			// The expander keeps the backslashes of a default value
			// inside double quotes ("${X:-{\"a\":1\}}" gives {\"a\":1\});
			// bash removes them.
			for i, f := range got {
				if u := unescape(f); !looksJSON(f) && looksJSON(u) {
					got[i] = u
				}
			}
		}
		out = append(out, got...)
	}
	return out
}

// document expands a heredoc body.
func (c *checker) document(w *syntax.Word) string {
	s, err := expand.Document(c.cfg(), w)
	if err != nil {
		return c.plain(w.Parts)
	}
	return s
}

// plain reads word parts without the expander: literal text with
// backslashes removed, quoted text, known variables, approximated command
// substitutions.
func (c *checker) plain(parts []syntax.WordPart) string {
	var b strings.Builder
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(x.Value))
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			b.WriteString(c.plain(x.Parts))
		case *syntax.ParamExp:
			if x.Param != nil {
				b.WriteString(c.vars[x.Param.Value])
			}
		case *syntax.CmdSubst:
			_ = c.cmdSubst(&b, x)
		}
	}
	return b.String()
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// assign records variable assignments; a JSON value sticks to its name so
// that a later harmless assignment cannot hide it.
func (c *checker) assign(as []*syntax.Assign) {
	for _, a := range as {
		if a.Name == nil || a.Naked {
			continue
		}
		var vals []string
		if a.Value != nil {
			vals = []string{c.plain(a.Value.Parts)}
			if fs := c.fields(a.Value); len(fs) > 0 {
				vals = append(vals, strings.Join(fs, " "))
			}
		}
		switch {
		case a.Array != nil:
			c.assignArray(a)
		case a.Index != nil:
			var fs []string
			if a.Value != nil { // B[3]= assigns the empty string
				fs = c.fields(a.Value)
			}
			c.array(a.Name.Value, false).set(c, a.Index, fs)
		}
		c.setVar(a.Name.Value, vals)
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
		if target := c.plain(a.Value.Parts); target != "" && target != a.Name.Value {
			c.refs[a.Name.Value] = target
		}
	}
}

func (c *checker) setVar(name string, vals []string) {
	if looksJSON(c.vars[name]) {
		return
	}
	val := ""
	if len(vals) > 0 {
		val = vals[len(vals)-1]
	}
	for _, v := range vals {
		if looksJSON(v) {
			val = v
			break
		}
	}
	c.vars[name] = val
}

// vars are the scalar variables the command assigns, by name.
type vars map[string]string

// env is the environment the expander sees: only what the command itself
// assigns (scalars, arrays, namerefs).
type env struct{ c *checker }

func (e env) Get(name string) expand.Variable {
	if user, ok := strings.CutPrefix(name, "HOME "); ok {
		// ~user: answer without looking the user up.
		return expand.Variable{Set: true, Kind: expand.String, Str: "/home/" + user}
	}
	if target, ok := e.c.refs[name]; ok {
		return expand.Variable{Set: true, Kind: expand.NameRef, Str: target}
	}
	if a, ok := e.c.arrays[name]; ok {
		return a.variable()
	}
	s, ok := e.c.vars[name]
	if !ok {
		return expand.Variable{}
	}
	return expand.Variable{Set: true, Kind: expand.String, Str: s}
}

func (e env) Each(fn func(name string, vr expand.Variable) bool) {
	seen := map[string]bool{}
	for _, names := range []iter.Seq[string]{maps.Keys(e.c.vars), maps.Keys(e.c.arrays), maps.Keys(e.c.refs)} {
		for n := range names {
			if seen[n] {
				continue
			}
			seen[n] = true
			if !fn(n, e.Get(n)) {
				return
			}
		}
	}
}

// hasQuotedDefault reports whether w holds a double-quoted ${x:-word} (or
// another expansion with a word).
func hasQuotedDefault(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if dq, ok := p.(*syntax.DblQuoted); ok {
			for _, q := range dq.Parts {
				if pe, ok := q.(*syntax.ParamExp); ok && pe.Exp != nil {
					return true
				}
			}
		}
	}
	return false
}

// nullInput reports whether jq's arguments include -n, alone, in a cluster
// of short options (-nc) or as --null-input.
func nullInput(args []string) bool {
	for _, a := range args {
		if a == "--null-input" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'n') {
			return true
		}
	}
	return false
}
