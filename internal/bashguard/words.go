package bashguard

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// env is the environment the expander sees: what the command assigns, the
// positional parameters, and a mark for every other variable (the
// environment the command will run in is not known).
type env struct{ c *checker }

func (e env) Get(name string) expand.Variable {
	c := e.c
	if strings.HasPrefix(name, "HOME ") {
		// ~user: the user's home directory, which the guard does not
		// look up.
		return str(string(markExternal))
	}
	sc := c.sc
	switch name {
	case "@", "*":
		return expand.Variable{Set: true, Kind: expand.Indexed, List: slices.Clone(sc.pos)}
	case "IFS":
		// bash does not take IFS from the environment: it starts as
		// space, tab, newline.
		if v, ok := sc.vars[name]; ok {
			if !isASCII(v) {
				// bash splits at each byte of a character outside ASCII
				// (in the C locale) or at the character: not known.
				return str(string(markExternal))
			}
			return str(v)
		}
		if sc.cleared[name] {
			return expand.Variable{}
		}
		return str(" \t\n")
	case "?", "$", "!", "RANDOM", "SECONDS", "LINENO", "BASHPID", "EPOCHSECONDS", "EPOCHREALTIME", "SRANDOM":
		// Set by the shell as it runs.
		return str(string(markExternal))
	case "BASH":
		if c.progs == nil {
			return str("/bin/bash")
		}
		return str(string(markExternal))
	case "BASH_REMATCH":
		// [[ … =~ … ]] fills it with what the pattern matched, which the
		// analysis does not redo.
		if _, ok := sc.arrays[name]; !ok {
			return (&array{elems: map[string]string{}, lost: true}).variable()
		}
	case "BASH_COMMAND", "BASH_ARGV", "BASH_EXECUTION_STRING":
		// These hold text of the command itself.
		return str(string(markDerived))
	}
	if v, ok := c.posVar(name); ok {
		return str(v)
	}
	if target, ok := sc.refs[name]; ok {
		return expand.Variable{Set: true, Kind: expand.NameRef, Str: target}
	}
	if a, ok := sc.arrays[name]; ok {
		return a.variable()
	}
	if s, ok := sc.vars[name]; ok {
		return str(s)
	}
	if c.unset[name] || sc.cleared[name] {
		return expand.Variable{}
	}
	if name == "PATH" && c.progs != nil {
		return str(c.progs.Path())
	}
	if sc.lost && sc.trapJSON {
		// A trap that may have fired may have assigned it.
		return str(string(markDerived))
	}
	return str(string(markExternal))
}

// Set is how the expander assigns: ${x:=default}, and arithmetic
// (x=5, x++). A number is taken as unknown (the analysis does not redo
// the arithmetic of values it may not know); a default assigned to a
// variable the environment may hold is that value or the default.
func (e env) Set(name string, vr expand.Variable) error {
	c := e.c
	if vr.Kind == expand.KeepValue || !vr.IsSet() {
		return nil
	}
	v := vr.Str
	switch {
	case isNumber(strings.TrimSpace(v)):
		v = string(markExternal)
	case c.unset[name]:
		v = joinValue(v, string(markExternal))
	}
	c.setVar(name, v)
	return nil
}

func str(s string) expand.Variable { return expand.Variable{Set: true, Kind: expand.String, Str: s} }

func (e env) Each(fn func(name string, vr expand.Variable) bool) {
	sc := e.c.sc
	names := slices.Sorted(maps.Keys(sc.vars))
	names = append(names, slices.Sorted(maps.Keys(sc.arrays))...)
	for _, n := range names {
		if !fn(n, e.Get(n)) {
			return
		}
	}
}

// cfg returns a fresh expansion config: an expand.Config keeps scratch
// buffers, so the nested expansions a command substitution triggers must
// not share one.
func (c *checker) cfg() *expand.Config {
	if n := len(c.cfgs); n > 0 {
		cfg := c.cfgs[n-1]
		c.cfgs = c.cfgs[:n-1]
		return cfg
	}
	return &expand.Config{Env: env{c}, CmdSubst: c.cmdSubst, ProcSubst: c.procSubst, ReadDir2: c.readDir}
}

// readDir is where the expander would read a directory to match a file
// name pattern: the analysis reads nothing, and notes that the field it is
// expanding is a pattern bash matches against files.
func (c *checker) readDir(string) ([]fs.DirEntry, error) {
	c.globbed = true
	return nil, nil
}

// release gives back a config cfg returned.
func (c *checker) release(cfg *expand.Config) { c.cfgs = append(c.cfgs, cfg) }

// cmdSubst runs a command substitution's statements and writes what they
// print, as the guard knows it.
func (c *checker) cmdSubst(w io.Writer, cs *syntax.CmdSubst) error {
	if c.b.err != nil {
		return c.b.err
	}
	if c.substDepth >= 2*MaxDepth {
		c.b.over(fmt.Sprintf("command substitutions are nested more than %d levels", 2*MaxDepth))
		return c.b.err
	}
	c.substDepth++
	savedUnset, savedInexact := c.unset, c.inexact
	defer func() { c.unset, c.inexact = savedUnset, savedInexact }()
	var out stream
	if st := cs.Stmts; len(st) == 1 && st[0].Cmd == nil && len(st[0].Redirs) == 1 && st[0].Redirs[0].Op == syntax.RdrIn {
		// $(<file) prints the file.
		out = c.open(c.word(st[0].Redirs[0].Word))
	} else {
		// A command substitution runs in a subshell.
		c.withVia([]string{"$(…)"}, func() {
			out = c.isolated(func() stream { return c.stmts(cs.Stmts) })
		})
	}
	c.substDepth--
	_, err := io.WriteString(w, strings.TrimRight(out.value(), "\n"))
	return err
}

// procVia names a process substitution's output in a message.
const procVia = "a process substitution"

// procSubst gives a process substitution its /dev/fd path: <(…) runs now
// and its output is what reading the path gives; >(…) runs once the guard
// knows what is written to it.
func (c *checker) procSubst(ps *syntax.ProcSubst) (string, error) {
	if c.b.err != nil {
		return "", c.b.err
	}
	path := "/dev/fd/" + strconv.Itoa(c.nextFD)
	if c.nextFD--; c.nextFD < 10 {
		c.nextFD = 63
	}
	if ps.Op == syntax.CmdOut {
		c.outProcs[path] = ps
		return path, nil
	}
	var out stream
	saved := c.in
	c.in = &reader{segs: saved.rest()}
	c.concurrent++
	defer func() { c.concurrent-- }()
	c.withVia([]string{"<(…)"}, func() {
		out = c.isolated(func() stream { return c.stmts(ps.Stmts) })
	})
	c.in = saved
	for i := range out {
		if out[i].kind == segText {
			out[i].via = procVia
		}
	}
	c.fds[path] = out
	return path, nil
}

// feedProc runs a >(…) substitution with s as its standard input.
func (c *checker) feedProc(ps *syntax.ProcSubst, s stream) {
	saved := c.in
	c.in = &reader{segs: s}
	c.concurrent++
	defer func() { c.concurrent-- }()
	c.withVia([]string{">(…)"}, func() {
		c.isolated(func() stream { return c.stmts(ps.Stmts) })
	})
	c.in = saved
}

// fields expands words as arguments (quote removal, $'…', variables,
// command substitutions, brace expansion; no globbing).
func (c *checker) fields(words ...*syntax.Word) []string {
	out := make([]string, 0, len(words))
	for _, w := range words {
		if c.b.err != nil {
			return out
		}
		if !c.prepare(w) {
			return out
		}
		var got []string
		failed := false
		cfg := c.cfg()
		outer := c.globbed
		c.globbed = false
		for f, err := range expand.FieldsSeq(cfg, w) {
			if err != nil {
				failed = true
				break
			}
			if !c.b.field() || !c.b.text(len(f)) {
				break
			}
			if c.globbed {
				// bash matches the field against file names: what it
				// passes, and how many words, depends on the disk.
				f += string(markSplit)
				c.globbed = false
			}
			got = append(got, f)
		}
		c.globbed = outer
		c.release(cfg)
		if c.b.err != nil {
			return out
		}
		if failed {
			got = []string{c.plain(w.Parts) + string(markSplit)}
		} else if hasQuotedDefault(w) {
			// The expander keeps the backslashes of a default value
			// inside double quotes ("${X:-{\"a\":1\}}" gives {\"a\":1\});
			// bash removes them.
			for i, f := range got {
				if u := unescape(f); !isJSONValue(f) && isJSONValue(u) {
					got[i] = u
				}
			}
		}
		got = c.splitting(w, got)
		c.unset, c.inexact = nil, false
		out = append(out, got...)
	}
	return out
}

// splitting marks the fields of w whose number is not known: an unquoted
// expansion of a value the analysis does not know (or with an IFS it does
// not know) may make several words or none, and a default chosen for a
// variable the environment may hold may not be what bash uses.
func (c *checker) splitting(w *syntax.Word, got []string) []string {
	if len(c.unset) > 0 || c.inexact {
		if len(got) == 0 {
			// What the analysis expands to nothing may be words.
			return []string{unknownFields}
		}
		for i, f := range got {
			got[i] = joinValue(f, string(markExternal)) + string(markSplit)
		}
		return got
	}
	if !unquotedExpansion(w.Parts) {
		return got
	}
	if hasMarks(c.value("IFS")) {
		return []string{unknownFields}
	}
	if !slices.ContainsFunc(got, hasMarks) {
		return got
	}
	for i, f := range got {
		if !strings.ContainsRune(f, markSplit) {
			got[i] = f + string(markSplit)
		}
	}
	return got
}

// unquotedExpansion reports whether parts hold a parameter expansion or
// command substitution outside double quotes: bash splits what it gives.
func unquotedExpansion(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst:
			return true
		}
	}
	return false
}

// literal expands w as bash expands an assignment's value or a
// here-string: no word splitting, no brace expansion, no file name
// matching.
func (c *checker) literal(w *syntax.Word) string {
	if w == nil || !c.prepare(w) {
		return ""
	}
	cfg := c.cfg()
	s, err := expand.Literal(cfg, w)
	c.release(cfg)
	if err != nil {
		s = c.plain(w.Parts)
	}
	if len(c.unset) > 0 || c.inexact {
		s = joinValue(s, string(markExternal))
	}
	c.unset, c.inexact = nil, false
	if !c.b.text(len(s)) {
		return ""
	}
	return s
}

// pattern expands a case pattern (its command substitutions run).
func (c *checker) pattern(w *syntax.Word) { c.literal(w) }

// word expands w as one string (an assignment's value, a redirection's
// target).
func (c *checker) word(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	return strings.Join(c.fields(w), " ")
}

// document expands a heredoc body.
func (c *checker) document(w *syntax.Word) string {
	if !c.prepare(w) {
		return ""
	}
	cfg := c.cfg()
	s, err := expand.Document(cfg, w)
	c.release(cfg)
	inexact := c.inexact
	c.unset, c.inexact = nil, false
	if err != nil {
		return c.plain(w.Parts)
	}
	if inexact {
		s = joinValue(s, string(markExternal))
	}
	if !c.b.text(len(s)) {
		return ""
	}
	return s
}

// prepare looks at a word before the expander does: it bounds the size the
// expansion can reach, chooses the default branch of ${X:-…} for variables
// the guard does not know, and checks the code that expansion itself runs
// (${x@P}, arithmetic on values holding $(…)).
func (c *checker) prepare(w *syntax.Word) bool {
	if !c.b.step() {
		return false
	}
	if n := c.estimate(w.Parts, 0); n > MaxValueLen {
		c.b.over(fmt.Sprintf("a word expands to more than %d bytes", MaxValueLen))
		return false
	}
	if split := *w; syntax.SplitBraces(&split) {
		if n := braceCount(split.Parts, 0); n > maxBraceWords {
			c.b.over(fmt.Sprintf("a brace expansion makes more than %d words", maxBraceWords))
			return false
		}
	}
	syntax.Walk(w, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			return false // its own statements are checked when it runs
		case *syntax.ParamExp:
			c.paramCode(x)
		case *syntax.ArithmExp:
			c.arithVars(x.X, 0)
			return false
		}
		return true
	})
	return c.b.err == nil
}

// paramCode handles what a parameter expansion itself may run or decide.
func (c *checker) paramCode(pe *syntax.ParamExp) {
	if pe.Param == nil {
		return
	}
	name := pe.Param.Value
	_, known := c.sc.vars[name]
	if !known {
		_, known = c.sc.arrays[name]
	}
	known = known || c.sc.cleared[name]
	if _, ok := c.posVar(name); ok {
		known = true
	}
	if pe.Exp != nil {
		switch pe.Exp.Op {
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull,
			syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			if !known {
				// The default is what the command itself supplies; an
				// environment value there is not the command's text.
				if c.unset == nil {
					c.unset = map[string]bool{}
				}
				c.unset[name] = true
			}
		case syntax.OtherParamOps:
			if pe.Exp.Word != nil && pe.Exp.Word.Lit() == "P" {
				c.promptCode(name)
			}
		}
	}
	if pe.Index != nil {
		c.arithVars(pe.Index, 0)
		if !isAllIndex(pe.Index) && c.openArray(name) {
			c.inexact = true
		}
	}
	if (pe.Slice != nil || pe.Length || pe.Repl != nil || pe.Exp != nil && caseOrPattern[pe.Exp.Op]) && !c.asciiValue(name) {
		// In the C locale bash counts bytes (${x:2} of écurl is curl),
		// in UTF-8 characters; ? matches either, ${x,,} lowers É or not.
		c.inexact = true
	}
	if pe.Excl && pe.Names == 0 && pe.Index == nil && (pe.Exp != nil || pe.Repl != nil || pe.Slice != nil || pe.Length) {
		// ${!y/a/b}, ${!y:1}, ${!y#…}: an operation on the variable y
		// names, which the expander does not redo as bash does.
		c.inexact = true
	}
	if pe.Excl && pe.Exp == nil && pe.Index == nil && pe.Names == 0 {
		// ${!x}: the value of x names the variable, and a subscript in
		// it (a[$(cmd)]) is evaluated.
		c.nameSubscript(c.value(name))
	}
	if pe.Slice != nil {
		c.arithVars(pe.Slice.Offset, 0)
		c.arithVars(pe.Slice.Length, 0)
	}
}

// caseOrPattern are the operations of ${x…} whose result depends on how
// bash reads characters: patterns removed from either end, case changes.
var caseOrPattern = map[syntax.ParExpOperator]bool{syntax.RemSmallPrefix: true, syntax.RemLargePrefix: true,
	syntax.RemSmallSuffix: true, syntax.RemLargeSuffix: true, syntax.UpperFirst: true, syntax.UpperAll: true,
	syntax.LowerFirst: true, syntax.LowerAll: true}

// isAllIndex reports whether an index is @ or * (every element).
func isAllIndex(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	return ok && (w.Lit() == "@" || w.Lit() == "*")
}

// openArray reports whether name may be an array with elements the
// analysis does not hold: one it lost track of, BASH_REMATCH (which
// [[ =~ ]] fills), or any name once code it could not read has run.
func (c *checker) openArray(name string) bool {
	if a, ok := c.sc.arrays[name]; ok {
		return a.lost
	}
	if name == "BASH_REMATCH" {
		return true
	}
	_, known := c.sc.vars[name]
	return c.sc.lost && !known && !c.sc.cleared[name]
}

// asciiValue reports whether every value name holds (an array's
// elements too) is ASCII; a value from the environment is not known.
func (c *checker) asciiValue(name string) bool {
	if a, ok := c.sc.arrays[name]; ok {
		for _, v := range a.elems {
			if !isASCII(v) {
				return false
			}
		}
		return true
	}
	v, ok := c.sc.vars[name]
	if !ok {
		v, ok = c.posVar(name)
	}
	return !ok || isASCII(v)
}

// promptCode checks ${x@P}: bash expands x's value as a prompt string,
// which runs the command substitutions in it.
func (c *checker) promptCode(name string) {
	v, ok := c.sc.vars[name]
	if !ok {
		return // the environment's value is not the command's text
	}
	c.prompt(v, "${"+name+"@P}")
}

// prompt checks a value bash expands as a prompt (${x@P}, PS4 under set
// -x, PS1): the command substitutions in it run.
func (c *checker) prompt(v, what string) {
	if strings.ContainsRune(v, markDerived) || strings.ContainsRune(v, markJSON) {
		c.unknownCode(v, what+" expands a value built at run time as a prompt, which runs the command substitutions in it",
			"write the command directly instead of expanding it as a prompt")
		return
	}
	if hasMarks(v) {
		c.unreadable(v, what+" expands a value with a part only known when it runs as a prompt, which may run commands")
	}
	if !strings.ContainsAny(v, "$`") {
		return
	}
	doc, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Document(strings.NewReader(v))
	if err != nil {
		c.unknownCode(v, what+" expands a value as a prompt that the guard cannot parse", "write the command directly")
		return
	}
	c.runSubsts(doc, what)
}

// runSubsts runs the command substitutions inside n as code.
func (c *checker) runSubsts(n syntax.Node, via string) {
	syntax.Walk(n, func(n syntax.Node) bool {
		if cs, ok := n.(*syntax.CmdSubst); ok {
			c.withVia([]string{via}, func() {
				c.isolated(func() stream { return c.stmts(cs.Stmts) })
			})
			return false
		}
		return true
	})
}

// arith evaluates an arithmetic expression outside a word ((( … )), let,
// an index): the expander runs its command substitutions, and values of
// the variables it names are checked for code.
func (c *checker) arith(e syntax.ArithmExpr) {
	if e == nil || c.b.err != nil {
		return
	}
	c.arithVars(e, 0)
	cfg := c.cfg()
	_, _ = expand.Arithm(cfg, e)
	c.release(cfg)
	c.unset = nil
}

// arithVars checks the values of the variables an arithmetic expression
// names: bash evaluates a variable's value as arithmetic too, and a
// subscript inside it (a[$(cmd)]) runs cmd.
func (c *checker) arithVars(e syntax.ArithmExpr, depth int) {
	if e == nil {
		return
	}
	if depth == 0 {
		c.arithSeen = nil
	}
	syntax.Walk(e, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			return false
		case *syntax.ParamExp:
			if x.Param != nil {
				c.arithName(x.Param.Value, depth)
			}
		case *syntax.Lit:
			if isName(x.Value) {
				c.arithName(x.Value, depth)
			}
		}
		return true
	})
}

func (c *checker) arithName(name string, depth int) {
	// Each variable's value is read once per expression: x+x+x where x
	// is y+y+y needs no more than one look at y.
	if c.arithSeen[name] {
		return
	}
	if c.arithSeen == nil {
		c.arithSeen = map[string]bool{}
	}
	c.arithSeen[name] = true
	if a, ok := c.sc.arrays[name]; ok {
		// $((a)) is a[0], $((a[i])) any element: each may be an
		// expression of its own.
		for _, k := range slices.Sorted(maps.Keys(a.elems)) {
			c.arithValue(a.elems[k], "arithmetic on ${"+name+"[…]}", depth)
		}
		return
	}
	v, ok := c.sc.vars[name]
	if !ok {
		v, ok = c.posVar(name)
	}
	if ok {
		c.arithValue(v, "arithmetic on $"+name, depth)
	}
}

// maxArithDepth bounds how many variables deep the analysis follows a
// value that names another variable (x=y; y='a[$(cmd)]'; $((x))); bash
// follows them much deeper, so a chain longer than this is code the
// guard cannot read.
const maxArithDepth = 16

// arithValue checks a value bash evaluates as arithmetic: a value that
// is itself an expression is evaluated in turn, so a variable name in it
// is read (and its value evaluated) and a subscript in it runs its
// command substitutions.
func (c *checker) arithValue(v, what string, depth int) {
	if c.b.err != nil {
		return
	}
	if strings.ContainsRune(v, markDerived) {
		c.unknownCode(v, what+" evaluates a value built at run time, and an array subscript in it runs commands",
			"compute the number in a separate step and use only digits in arithmetic")
		return
	}
	if depth == 0 {
		c.arithSeen = nil
	}
	v = strings.TrimSpace(v)
	if v == "" || hasMarks(v) && !strings.ContainsAny(v, "$`") || isNumber(v) {
		return
	}
	if depth > maxArithDepth {
		c.unknownCode(v, what+" names variables more than "+strconv.Itoa(maxArithDepth)+" levels deep, each evaluated as arithmetic",
			"compute the number in a separate step and use only digits in arithmetic")
		return
	}
	e, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Arithmetic(strings.NewReader(v))
	if err != nil {
		return // bash refuses it as an arithmetic syntax error
	}
	if strings.ContainsAny(v, "$`") {
		c.runSubsts(e, what)
	}
	c.arithVars(e, depth+1)
}

// test checks a [[ … ]] expression: its words expand, and the operands of
// -eq, -lt … are arithmetic.
func (c *checker) test(e syntax.TestExpr) {
	switch x := e.(type) {
	case *syntax.BinaryTest:
		if w, ok := x.X.(*syntax.Word); ok && x.Op == syntax.TsReMatch {
			lhs := c.word(w)
			c.test(x.Y)
			c.rematch(lhs, x.Y)
			return
		}
		c.test(x.X)
		c.test(x.Y)
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, side := range []syntax.TestExpr{x.X, x.Y} {
				if w, ok := side.(*syntax.Word); ok {
					c.arithValue(c.word(w), "a [[ … -eq … ]] operand", 0)
				}
			}
		}
	case *syntax.UnaryTest:
		c.test(x.X)
		if w, ok := x.X.(*syntax.Word); ok && (x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar) {
			// -v 'a[$(cmd)]' evaluates the subscript.
			c.nameSubscript(c.word(w))
		}
	case *syntax.ParenTest:
		c.test(x.X)
	case *syntax.Word:
		c.word(x)
	}
}

// rematch sets BASH_REMATCH as [[ lhs =~ re ]] does: each element is a
// part of lhs the analysis does not compute (none when it does not
// match), one per group of the pattern.
func (c *checker) rematch(lhs string, re syntax.TestExpr) {
	groups := 1
	if w, ok := re.(*syntax.Word); ok {
		groups += min(strings.Count(c.plain(w.Parts), "("), 16)
	}
	a := &array{elems: map[string]string{}, lost: true}
	for i := range groups {
		a.put(strconv.Itoa(i), joinValue(lhs, string(markExternal)))
	}
	c.sc.arrays["BASH_REMATCH"] = a
	delete(c.sc.vars, "BASH_REMATCH")
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// maxBraceWords is the most words one brace expansion may make (the
// expander stops at the same count).
const maxBraceWords = 16 << 10

// braceCount is how many words the brace expansions among parts make,
// counted without making them.
func braceCount(parts []syntax.WordPart, depth int) int {
	n := 1
	for _, p := range parts {
		br, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		k := 0
		if br.Sequence {
			k = sequenceLen(br)
		} else {
			for _, e := range br.Elems {
				if depth > 16 {
					return maxBraceWords + 1
				}
				k += braceCount(e.Parts, depth+1)
			}
		}
		n *= max(k, 1)
		if n > maxBraceWords {
			return n
		}
	}
	return n
}

// sequenceLen is the length of {from..to[..step]}.
func sequenceLen(br *syntax.BraceExp) int {
	if len(br.Elems) < 2 {
		return 1
	}
	from, err1 := strconv.Atoi(br.Elems[0].Lit())
	to, err2 := strconv.Atoi(br.Elems[1].Lit())
	if err1 != nil || err2 != nil {
		return 64 // {a..z}
	}
	step := 1
	if len(br.Elems) > 2 {
		if s, err := strconv.Atoi(br.Elems[2].Lit()); err == nil && s != 0 {
			step = max(s, -s)
		}
	}
	d := to - from
	if d < 0 {
		d = -d
	}
	if d/step >= maxBraceWords {
		return maxBraceWords + 1
	}
	return d/step + 1
}

// estimate bounds the length a word's expansion can reach before the
// expander builds it.
func (c *checker) estimate(parts []syntax.WordPart, depth int) int {
	if depth > 32 {
		return MaxValueLen + 1
	}
	n := 0
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit:
			n += len(x.Value)
		case *syntax.SglQuoted:
			n += len(x.Value)
		case *syntax.DblQuoted:
			n += c.estimate(x.Parts, depth+1)
		case *syntax.ParamExp:
			n += c.paramSize(x, depth)
		default:
			n += 64 // command and process substitutions are bounded when they run
		}
		if n > MaxValueLen {
			return n
		}
	}
	return n
}

// paramSize bounds the length of one parameter expansion.
func (c *checker) paramSize(pe *syntax.ParamExp, depth int) int {
	if pe.Param == nil {
		return 0
	}
	name := pe.Param.Value
	size := 0
	switch {
	case name == "@" || name == "*":
		for _, p := range c.sc.pos {
			size += len(p) + 1
		}
	case c.sc.arrays[name] != nil:
		for _, v := range c.sc.arrays[name].elems {
			size += len(v) + 1
		}
	default:
		if v, ok := c.sc.vars[name]; ok {
			size = len(v)
		} else if v, ok := c.posVar(name); ok {
			size = len(v)
		} else if t, ok := c.sc.refs[name]; ok {
			size = len(c.sc.vars[t])
		}
		size += 3
	}
	if pe.Excl {
		size += 64 * (len(c.sc.vars) + len(c.sc.arrays) + 1)
	}
	if pe.Repl != nil {
		with := 1
		if pe.Repl.With != nil {
			with = max(1, c.estimate(pe.Repl.With.Parts, depth+1))
		}
		size *= with
	}
	if pe.Exp != nil {
		if pe.Exp.Word != nil {
			size += c.estimate(pe.Exp.Word.Parts, depth+1)
		}
		if pe.Exp.Op == syntax.OtherParamOps {
			size *= 4 // @Q, @A quote
		}
	}
	return size
}

// plain reads word parts without the expander: literal text with
// backslashes removed, quoted text, known variables, marks for the rest.
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
				b.WriteString(env{c}.Get(x.Param.Value).String())
			}
		case *syntax.CmdSubst:
			_ = c.cmdSubst(&b, x)
		default:
			b.WriteRune(markExternal)
		}
		if b.Len() > MaxValueLen {
			c.b.text(b.Len())
			return ""
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
