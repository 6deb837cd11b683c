package bashguard

import (
	"maps"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The analysis follows one path through the command: the statements in
// order, each branch of an if, &&, ||, case and loop. Where bash would take
// only one of several paths, the analysis runs each from the same state and
// then joins their states: a variable (or function, alias, directory …)
// the paths left alike keeps its value, one they left differently becomes
// unknown. A subshell, a pipeline's stage, a command substitution, a
// background job run on a copy that is thrown away afterwards, as bash
// forks for them. So no value the analysis holds is one bash may not have.

// tri is a setting the analysis may know to be on or off, or not know.
type tri uint8

const (
	off tri = iota
	on
	unsure
)

func joinTri(a, b tri) tri {
	if a == b {
		return a
	}
	return unsure
}

// world is everything a path through the command changes: the shell's
// state, the files it wrote, the descriptors it set up, where its standard
// input stands, and whether it may have left the enclosing list.
type world struct {
	sc     *scope
	files  map[string]file
	fds    map[string]stream
	in     *reader
	inPos  readerPos
	leaves leave
}

// file is what the command wrote to a path; sure is false when it may
// not have (a branch wrote it), or something after may have changed it.
type file struct {
	text string
	sure bool
}

// leave says which boundary an abrupt statement (return, break, exit …)
// on the current path may have crossed: the rest of the list up to that
// boundary may not run.
type leave uint8

const (
	leaveLoop   leave = 1 << iota // break, continue: up to the loop
	leaveReturn                   // return: up to the function call
	leaveShell                    // exit, exec, break 2: up to the (sub)shell
)

// save copies the current world.
func (c *checker) save() world {
	c.b.charge(len(c.sc.vars) + len(c.sc.arrays) + len(c.files))
	return world{sc: c.sc.clone(), files: maps.Clone(c.files), fds: maps.Clone(c.fds), in: c.in, inPos: c.in.pos(), leaves: c.leaves}
}

// restore makes w the current world (a copy of it: w stays usable).
func (c *checker) restore(w world) {
	c.sc = w.sc.clone()
	c.files, c.fds = maps.Clone(w.files), maps.Clone(w.fds)
	c.in = w.in
	c.in.seek(w.inPos)
	c.leaves = w.leaves
}

// merge makes the current world the join of ws: what bash has after it
// took one of the paths that ended in them.
func (c *checker) merge(ws ...world) {
	if len(ws) == 0 {
		return
	}
	j := c.joinWorlds(ws...)
	c.sc, c.files, c.fds, c.in, c.leaves = j.sc, j.files, j.fds, j.in, j.leaves
	c.in.seek(j.inPos)
}

// joinWorlds is the join of ws (at least one), leaving the current world
// as it is.
func (c *checker) joinWorlds(ws ...world) world {
	j := ws[0]
	j.sc = j.sc.clone()
	j.files, j.fds = maps.Clone(j.files), maps.Clone(j.fds)
	for _, w := range ws[1:] {
		c.b.charge(len(w.sc.vars) + len(w.sc.arrays))
		j.sc.join(w.sc)
		for p, f := range w.files {
			if g, ok := j.files[p]; !ok || g.text != f.text {
				f.sure = false
				j.files[p] = f
			} else if !f.sure {
				j.files[p] = f
			}
		}
		for p, f := range j.files {
			if _, ok := w.files[p]; !ok {
				f.sure = false
				j.files[p] = f
			}
		}
		for p := range j.fds {
			if _, ok := w.fds[p]; !ok {
				delete(j.fds, p)
			}
		}
		for p, s := range w.fds {
			if t, ok := j.fds[p]; !ok || !sameStream(s, t) {
				delete(j.fds, p)
			}
		}
		if w.in != j.in || w.inPos != j.inPos {
			// The paths read different amounts of the input (or one
			// replaced it): where it stands now is not known.
			j.in = &reader{segs: inexact(w.in.rest())}
			j.inPos = j.in.pos()
		}
		j.leaves |= w.leaves
	}
	return j
}

// trapStates are the states in which a trap of the shell may run: bash
// runs an EXIT trap when the shell exits, which it may do before any
// statement (exit, set -e, set -u, ${x:?}, a failed exec, a signal the
// command sends itself), not only at the end; any other trap when its
// event comes, also before any statement.
type trapStates struct{ w *world }

// mayEnd notes that the shell may end, or a trap fire, here.
func (c *checker) mayEnd() {
	e := c.sc.trapped
	if e == nil {
		return
	}
	cur := c.save()
	if e.w == nil {
		e.w = &cur
		return
	}
	j := c.joinWorlds(*e.w, cur)
	e.w = &j
}

// beforeStatement is what may happen in the shell before any statement
// runs: it may end or a trap fire (which then runs with this state), and a
// trap with effects may change its state or files.
func (c *checker) beforeStatement() {
	c.mayEnd()
	if c.sc.volatile {
		c.sc.havoc()
	}
	if c.sc.volatile || c.sc.filesVolatile {
		c.programMayWrite()
	}
}

func sameStream(a, b stream) bool {
	return slices.EqualFunc(a, b, func(x, y seg) bool {
		return x.kind == y.kind && x.text == y.text && x.json == y.json && x.inexact == y.inexact
	})
}

// branches runs each of the paths from the current world and leaves the
// join of where they end; with none set, the path that runs none of them
// is one of the paths. The output of each path is what it may print.
func (c *checker) branches(none bool, paths ...func() stream) stream {
	start := c.save()
	var ends []world
	var out stream
	for i, p := range paths {
		if i > 0 {
			c.restore(start)
		}
		out = c.cat(out, inexact(p()))
		ends = append(ends, c.save())
	}
	if none {
		ends = append(ends, start)
	}
	c.merge(ends...)
	return out
}

// maybe runs fn on a path bash may or may not take.
func (c *checker) maybe(fn func() stream) stream {
	return c.branches(true, fn)
}

// isolated runs fn in a copy of the shell that is thrown away afterwards
// (a subshell, a pipeline's stage, a command substitution): what fn
// assigns, defines or changes stays inside. Files it writes stay written
// (they are on disk), as far as the analysis knows them.
func (c *checker) isolated(fn func() stream) stream {
	saved, leaves := c.sc, c.leaves
	c.sc = c.sc.clone()
	c.sc.traps, c.sc.trapped = nil, nil
	c.leaves = 0
	out := fn()
	c.finishTraps()
	c.sc, c.leaves = saved, leaves
	return out
}

// inexact marks the text of s as what may be printed, not what is: its
// value is unknown, while its text is still searched for JSON.
func inexact(s stream) stream {
	if len(s) == 0 {
		return s
	}
	out := slices.Clone(s)
	for i := range out {
		if out[i].kind == segText {
			out[i].inexact = true
		}
	}
	return out
}

// joinValue is a variable's value after two paths that left it a and b
// ("" for unset). Equal values stay; else the value is unknown, and stays
// one the guard sees as JSON, or as text that could hold JSON, when
// either could be.
func joinValue(a, b string) string {
	if a == b {
		return a
	}
	for _, v := range []string{a, b} {
		if isJSONValue(v) {
			if hasMarks(v) {
				return v
			}
			return string(markJSON) + v
		}
	}
	if strings.ContainsRune(a, markDerived) || strings.ContainsRune(b, markDerived) || mayBuildJSON(a) || mayBuildJSON(b) {
		return string(markDerived)
	}
	return string(markExternal)
}

// mayBuildJSON reports whether v could be part of JSON built from pieces
// (a loop appending '{', '"a"', ':1' …).
func mayBuildJSON(v string) bool {
	return strings.ContainsAny(v, `{}[]"\%`+string(markJSON))
}

// scope is the state a shell keeps: variables, functions, aliases, the
// positional parameters, options, the working directory. eval, source and
// function calls share their caller's scope; a child shell (bash -c, bash
// script) starts from the exported variables only.
type scope struct {
	vars map[string]string
	// cleared are variables unset by the command: they are not the
	// environment's.
	cleared map[string]bool
	// arrays are the arrays the command assigns (B=(x '{…}'), B[3]=…,
	// declare -A), refs the namerefs it declares (declare -n r=x).
	arrays   map[string]*array
	refs     map[string]string
	exported map[string]tri
	// attrs are declare's attribute letters of a variable that change
	// what is assigned (l, u, c, i) or forbid it (r); "?" when unsure.
	attrs     map[string]string
	allExport tri
	funcs     map[string]*function
	// exportedFuncs are the functions export -f passes to child shells.
	exportedFuncs map[string]tri
	aliases       map[string]string
	// hashed are hash -p PATH NAME entries: NAME runs PATH.
	hashed map[string]string
	// unsure are command names that may or may not be a function, an
	// alias, a hashed path or a loadable builtin (a path that was not
	// taken defined one, enable -f …).
	unsure map[string]bool
	pos    []string // $1 …
	arg0   string   // $0
	// shell is the shell running this scope (bash, sh, zsh …).
	shell string
	// echoEsc is on for sh/dash, whose echo decodes backslash escapes,
	// and under shopt -s xpg_echo.
	echoEsc tri
	// disabled are builtins enable -n turned off: a program of the name
	// runs instead.
	disabled map[string]tri
	// opts are the shell options that change what runs (expand_aliases,
	// lastpipe …).
	opts map[string]tri
	// cwd is the working directory: "" where the command started, else an
	// absolute path or one relative to the start; cwdLost when not known.
	cwd     string
	cwdLost bool
	// lost is set when code the analysis could not read ran in this
	// shell: it may have set any variable and defined any function.
	lost bool
	// frames are the local variables of the function calls in progress,
	// with what they hid, restored when the call returns.
	frames []map[string]binding
	// traps are the trap actions set in this shell, analysed again when
	// the shell ends (they run then, or at any time for a signal).
	traps []trap
	// trapped gathers the states its traps may run in, once it has one.
	trapped *trapStates
	// volatile is set once a trap that changes the shell's state (x=…,
	// a function, cd …) may fire, at any statement (DEBUG, RETURN, ERR, a
	// signal the command may send itself); filesVolatile once one that
	// may write files may; trapJSON once such a trap's code holds text
	// that could be JSON (what it assigns is then derived from it).
	volatile, filesVolatile, trapJSON bool
	// filesLimited is set once ulimit (or prlimit) may have limited the
	// size of the files the shell writes: a write may stop short, and
	// what is left is not what the command printed.
	filesLimited bool
}

// binding is a variable as a local one hid it.
type binding struct {
	val      string
	set      bool
	cleared  bool
	arr      *array
	attrs    string
	exported tri
}

type trap struct {
	code, on string
}

// function is a function the command defined: its body, and the aliases
// bash expanded in it when it read the definition.
type function struct {
	body    *syntax.Stmt
	aliases aliasView
}

// aliasView is what alias expansion uses while bash reads a line: the
// aliases defined before the line, and whether expand_aliases was set.
type aliasView struct {
	expand  tri
	aliases map[string]string
	unsure  map[string]bool
}

// newScope is a shell's scope when it starts: SHELLOPTS and BASHOPTS are
// readonly (bash refuses NAME=value for them, also before a command).
func newScope() *scope {
	return &scope{vars: map[string]string{}, cleared: map[string]bool{}, arrays: map[string]*array{}, refs: map[string]string{},
		exported: map[string]tri{}, attrs: map[string]string{"SHELLOPTS": "r", "BASHOPTS": "r"}, funcs: map[string]*function{}, exportedFuncs: map[string]tri{},
		aliases: map[string]string{}, hashed: map[string]string{}, unsure: map[string]bool{}, opts: map[string]tri{}, disabled: map[string]tri{}, arg0: "bash", shell: "bash"}
}

// clone copies s deeply enough that changes to the copy do not reach s.
func (s *scope) clone() *scope {
	n := *s
	n.vars = maps.Clone(s.vars)
	n.cleared = maps.Clone(s.cleared)
	n.arrays = make(map[string]*array, len(s.arrays))
	for k, a := range s.arrays {
		n.arrays[k] = a.clone()
	}
	n.refs = maps.Clone(s.refs)
	n.exported = maps.Clone(s.exported)
	n.attrs = maps.Clone(s.attrs)
	n.funcs = maps.Clone(s.funcs)
	n.exportedFuncs = maps.Clone(s.exportedFuncs)
	n.aliases = maps.Clone(s.aliases)
	n.hashed = maps.Clone(s.hashed)
	n.unsure = maps.Clone(s.unsure)
	n.pos = slices.Clone(s.pos)
	n.opts = maps.Clone(s.opts)
	n.disabled = maps.Clone(s.disabled)
	n.frames = make([]map[string]binding, len(s.frames))
	for i, f := range s.frames {
		n.frames[i] = maps.Clone(f)
	}
	n.traps = slices.Clone(s.traps)
	return &n
}

// join makes s what bash has after a path that left s or one that left o.
func (s *scope) join(o *scope) {
	names := unionKeys(s.vars, o.vars)
	names = append(names, unionKeys(s.cleared, o.cleared)...)
	for _, name := range names {
		a, b := s.value(name), o.value(name)
		if a == b {
			continue
		}
		s.vars[name] = joinValue(a, b)
		delete(s.cleared, name)
	}
	for _, name := range unionKeys(s.arrays, o.arrays) {
		a, b := s.arrays[name], o.arrays[name]
		switch {
		case a == nil:
			a = b.clone()
			a.forget()
			s.arrays[name] = a
		case b == nil:
			a.forget()
		default:
			a.join(b)
		}
	}
	for _, name := range unionKeys(s.refs, o.refs) {
		if s.refs[name] != o.refs[name] {
			// Where the name points is not known: so is what it holds,
			// and what an assignment through it changes.
			s.lost = true
			delete(s.refs, name)
		}
	}
	for _, name := range unionKeys(s.exported, o.exported) {
		s.exported[name] = joinTri(s.exported[name], o.exported[name])
	}
	for _, name := range unionKeys(s.attrs, o.attrs) {
		if s.attrs[name] != o.attrs[name] {
			s.attrs[name] = "?"
		}
	}
	s.allExport = joinTri(s.allExport, o.allExport)
	for _, name := range unionKeys(s.funcs, o.funcs) {
		if s.funcs[name] != o.funcs[name] {
			delete(s.funcs, name)
			s.unsure[name] = true
		}
	}
	for _, name := range unionKeys(s.exportedFuncs, o.exportedFuncs) {
		s.exportedFuncs[name] = joinTri(s.exportedFuncs[name], o.exportedFuncs[name])
	}
	for _, name := range unionKeys(s.aliases, o.aliases) {
		if a, ok := s.aliases[name]; !ok || a != o.aliases[name] {
			delete(s.aliases, name)
			s.unsure[name] = true
		}
	}
	for _, name := range unionKeys(s.hashed, o.hashed) {
		if s.hashed[name] != o.hashed[name] {
			delete(s.hashed, name)
			s.unsure[name] = true
		}
	}
	for name := range o.unsure {
		s.unsure[name] = true
	}
	if !slices.Equal(s.pos, o.pos) {
		if len(s.pos) == len(o.pos) {
			for i := range s.pos {
				s.pos[i] = joinValue(s.pos[i], o.pos[i])
			}
		} else {
			s.pos = []string{unknownFields}
		}
	}
	if s.arg0 != o.arg0 {
		s.arg0 = joinValue(s.arg0, o.arg0)
	}
	s.echoEsc = joinTri(s.echoEsc, o.echoEsc)
	for _, name := range unionKeys(s.disabled, o.disabled) {
		s.disabled[name] = joinTri(s.disabled[name], o.disabled[name])
	}
	for _, name := range unionKeys(s.opts, o.opts) {
		s.opts[name] = joinTri(s.opts[name], o.opts[name])
	}
	if s.cwd != o.cwd || o.cwdLost {
		s.cwdLost = true
	}
	s.lost = s.lost || o.lost
	s.volatile = s.volatile || o.volatile
	s.trapJSON = s.trapJSON || o.trapJSON
	s.filesVolatile = s.filesVolatile || o.filesVolatile
	s.filesLimited = s.filesLimited || o.filesLimited
	if s.trapped == nil {
		s.trapped = o.trapped
	}
	for i := range min(len(s.frames), len(o.frames)) {
		for name, b := range o.frames[i] {
			if _, ok := s.frames[i][name]; !ok {
				s.frames[i][name] = b
			}
		}
	}
	for _, t := range o.traps {
		if !slices.Contains(s.traps, t) {
			s.traps = append(s.traps, t)
		}
	}
}

// value is a scalar as a join compares it: its value, "" when the
// command unset it, a mark when it is the environment's.
func (s *scope) value(name string) string {
	if v, ok := s.vars[name]; ok {
		return v
	}
	if s.cleared[name] {
		return ""
	}
	return string(markExternal)
}

func unionKeys[V any](ms ...map[string]V) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// unknownFields stands for words of unknown number and content (the
// positional parameters after paths that set different numbers of them).
const unknownFields = string(markExternal) + string(markSplit)

// havoc forgets what the shell holds after code the analysis cannot read
// ran in it (eval "$x", source FILE, a trap's action at an unknown time):
// every variable may have changed and every command name may now be a
// function. Values that hold JSON stay so for the guard.
func (s *scope) havoc() {
	lost := string(markExternal)
	if s.trapJSON {
		// A trap that may have run assigns text of the command that
		// could be JSON.
		lost = string(markDerived)
	}
	for name, v := range s.vars {
		s.vars[name] = joinValue(v, lost)
	}
	for _, a := range s.arrays {
		a.forget()
	}
	s.pos = []string{unknownFields}
	s.cwdLost = true
	s.lost = true
}

// opt reports a shell option's setting.
func (s *scope) opt(name string) tri { return s.opts[name] }

// expandsAliases says whether the shell expands aliases: under shopt -s
// expand_aliases, and always in POSIX mode (set -o posix, POSIXLY_CORRECT,
// bash --posix) and in other shells (sh, zsh, ksh read aliases in
// scripts too).
func (s *scope) expandsAliases() tri {
	e, p := s.opts["expand_aliases"], s.opts["posix"]
	switch {
	case e == on || p == on || s.shell != "bash" && s.shell != "rbash":
		return on
	case e == unsure || p == unsure:
		return unsure
	}
	return off
}

// setOptions are the options set -o names (SHELLOPTS lists them); the
// others are shopt's (BASHOPTS).
var setOptions = map[string]bool{"allexport": true, "braceexpand": true, "emacs": true, "errexit": true, "errtrace": true,
	"functrace": true, "hashall": true, "histexpand": true, "history": true, "ignoreeof": true, "interactive-comments": true,
	"keyword": true, "monitor": true, "noclobber": true, "noexec": true, "noglob": true, "nolog": true, "notify": true,
	"nounset": true, "onecmd": true, "physical": true, "pipefail": true, "posix": true, "privileged": true, "verbose": true,
	"vi": true, "xtrace": true}

// inheritOptions gives a child bash the options its environment passes:
// SHELLOPTS (set -o) and BASHOPTS (shopt) when exported, POSIXLY_CORRECT
// (POSIX mode). An exported SHELLOPTS or BASHOPTS without a value the
// command gave is the parent's own options.
func (s *scope) inheritOptions(parent *scope) {
	for _, v := range []string{"SHELLOPTS", "BASHOPTS"} {
		sets := v == "SHELLOPTS"
		val, given := s.vars[v]
		switch {
		case given && !hasMarks(val):
			for _, o := range strings.Split(val, ":") {
				if o != "" && setOptions[o] == sets {
					s.opts[o] = on
				}
			}
		case given:
			for o := range parent.opts {
				if setOptions[o] == sets {
					s.opts[o] = unsure
				}
			}
			s.opts["posix"], s.opts["expand_aliases"] = unsure, unsure
		case parent.exported[v] == on:
			for o, t := range parent.opts {
				if setOptions[o] == sets {
					s.opts[o] = t
				}
			}
		case parent.exported[v] == unsure:
			for o, t := range parent.opts {
				if setOptions[o] == sets && t != off {
					s.opts[o] = unsure
				}
			}
		}
	}
	if _, ok := s.vars["POSIXLY_CORRECT"]; ok {
		s.opts["posix"] = on
	}
}
