//go:build !bench_no_rules

package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/lazyre"
)

var idPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// compiled is a rule ready to run.
type compiled struct {
	Rule
	index int
	// prg is nil for a rule without when (it always matches).
	prg      cel.Program
	readsCmd bool
	literal  bool
	// loops is set when when iterates (a macro such as exists): only then
	// can evaluation take long, so only then is it bounded by EvalTimeout.
	loops bool
}

// Set is a policy file's rules, compiled and type-checked once per load.
// It is safe for concurrent use.
type Set struct {
	rules []*compiled
	// byTool holds, for every tool of Options.Tools, the rules that can
	// apply to it (nil when none can); other names are resolved on first
	// use and kept in other.
	byTool map[string]*ToolRules
	other  sync.Map
	// warnings are rules that compile but may not do what they seem to.
	warnings []Problem
}

// Warnings are rules that compile but may not do what they seem to: a
// rule naming a tool that is neither a toolhost nor a Claude CLI built-in
// (a typo, or an upstream tool, whose args are untyped).
func (s *Set) Warnings() []Problem {
	if s == nil {
		return nil
	}
	return s.warnings
}

// For returns the rules that can apply to the named tool, in order, or
// nil when none can — then a call of the tool does not pay for rules at
// all.
func (s *Set) For(name string) *ToolRules {
	if s == nil || len(s.rules) == 0 {
		return nil
	}
	if tr, ok := s.byTool[name]; ok {
		return tr
	}
	if v, ok := s.other.Load(name); ok {
		return v.(*ToolRules)
	}
	tr := s.selectFor(name, dynShape)
	v, _ := s.other.LoadOrStore(name, tr)
	return v.(*ToolRules)
}

func (s *Set) selectFor(name string, sh *shape) *ToolRules {
	var tr *ToolRules
	for _, r := range s.rules {
		if !r.applies(name) {
			continue
		}
		if tr == nil {
			tr = &ToolRules{shape: sh}
		}
		tr.rules = append(tr.rules, r)
	}
	return tr
}

func (r *compiled) applies(name string) bool {
	if r.literal {
		return r.Tool == name
	}
	ok, _ := doublestar.Match(r.Tool, name)
	return ok
}

// Compile checks and compiles rules. Every rule that does not compile is
// reported (a *CompileError): a policy with one is not used.
func Compile(rs []Rule, o Options) (*Set, error) {
	set := &Set{byTool: map[string]*ToolRules{}}
	if len(rs) == 0 {
		return set, nil
	}
	var problems []Problem
	bad := func(i int, id, format string, a ...any) {
		problems = append(problems, Problem{Index: i, ID: id, Msg: fmt.Sprintf(format, a...)})
	}
	catalog := map[string]Tool{}
	for _, t := range o.Tools {
		if _, dup := catalog[t.Name]; !dup {
			catalog[t.Name] = t
		}
	}
	seen := map[string]int{}
	for i, r := range rs {
		switch {
		case !idPattern().MatchString(r.ID):
			bad(i, r.ID, "id must be 1-64 letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
		case seen[r.ID] > 0:
			bad(i, r.ID, "id is also used by rules[%d]; ids must be unique", seen[r.ID]-1)
		}
		seen[r.ID] = i + 1
		switch {
		case r.Tool == "":
			bad(i, r.ID, `tool is missing: name a tool or a glob over tool names ("github__*")`)
		case !doublestar.ValidatePattern(r.Tool):
			bad(i, r.ID, "tool %q is not a valid glob", r.Tool)
		}
		switch r.Effect {
		case Deny, Confirm:
			if strings.TrimSpace(r.Reason) == "" {
				bad(i, r.ID, "a %s rule needs a reason: the %s reads it", r.Effect, map[Effect]string{Deny: "model", Confirm: "human"}[r.Effect])
			}
		case Allow:
		default:
			bad(i, r.ID, "effect %q must be deny, confirm or allow", r.Effect)
		}
		if len(r.When) > MaxWhenLen {
			bad(i, r.ID, "when is %d bytes, over the %d-byte limit", len(r.When), MaxWhenLen)
		}
	}
	// A rule already found wrong is not compiled; the others are, so
	// every broken rule is reported at once.
	broken := map[int]bool{}
	for _, p := range problems {
		broken[p.Index] = true
	}

	sh := &shapes{structs: map[string]*shape{}}
	var cmdDoc any
	if err := json.Unmarshal([]byte(cmdSchema), &cmdDoc); err != nil {
		panic("rules: cmd schema: " + err.Error())
	}
	cmdShape := sh.fromSchema(cmdType, cmdDoc, 0)
	// The shape of each catalog tool a rule can apply to: its arguments
	// are converted by it, and rules naming it are type-checked by it.
	toolShape := map[string]*shape{}
	for name, t := range catalog {
		if !anyApplies(rs, name) {
			continue
		}
		s := dynShape
		var doc any
		if len(t.InputSchema) > 0 && json.Unmarshal(t.InputSchema, &doc) == nil {
			s = sh.fromSchema(typeName(name), doc, 0)
		}
		toolShape[name] = s
	}

	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	g := newGlobber(o.ProjectDir)
	base, err := cel.NewEnv(
		cel.CustomTypeAdapter(reg),
		cel.CustomTypeProvider(&provider{Registry: reg, structs: sh.structs}),
		cel.Variable("tool", cel.StringType),
		cel.Variable("agent", cel.StringType),
		cel.Variable("unit", cel.StringType),
		cel.Variable("project", cel.StringType),
		cel.Variable("now", cel.TimestampType),
		cel.Variable("cmd", cmdShape.cel),
		cel.Function("glob", cel.Overload("glob_string_string", []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(g.binding))),
		cel.CrossTypeNumericComparisons(true),
		cel.EnableIdentifierEscapeSyntax(),
		cel.ParserExpressionSizeLimit(MaxWhenLen),
	)
	if err != nil {
		return nil, err
	}
	envs := map[string]*cel.Env{}
	envFor := func(s *shape) (*cel.Env, error) {
		key := s.name
		if s.kind != kStruct {
			key, s = "", &shape{cel: types.NewMapType(types.StringType, types.DynType)}
		}
		if e, ok := envs[key]; ok {
			return e, nil
		}
		e, err := base.Extend(cel.Variable("args", s.cel))
		envs[key] = e
		return e, err
	}

	for i, r := range rs {
		c := &compiled{Rule: r, index: i, literal: !strings.ContainsAny(r.Tool, `*?[]{}\`)}
		set.rules = append(set.rules, c)
		if broken[i] {
			continue
		}
		t, known := catalog[r.Tool]
		if c.literal && !known && len(catalog) > 0 {
			set.warnings = append(set.warnings, Problem{Index: i, ID: r.ID, Msg: fmt.Sprintf(
				"tool %s is neither a toolhost nor a Claude CLI built-in: the rule applies only to an upstream tool of that name, and its args are untyped", r.Tool)})
		}
		if strings.TrimSpace(r.When) == "" {
			continue
		}
		argsShape := dynShape
		if c.literal && known {
			argsShape = toolShape[r.Tool]
		}
		env, err := envFor(argsShape)
		if err != nil {
			return nil, err
		}
		ast, iss := env.Compile(r.When)
		if iss.Err() != nil {
			for _, e := range iss.Errors() {
				problems = append(problems, Problem{Index: i, ID: r.ID, Line: e.Location.Line(), Col: e.Location.Column() + 1, Msg: e.Message})
			}
			continue
		}
		if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
			problems = append(problems, Problem{Index: i, ID: r.ID, Line: 1, Col: 1,
				Msg: fmt.Sprintf("when must be a boolean expression, not %s", ast.OutputType())})
			continue
		}
		for _, ref := range ast.NativeRep().ReferenceMap() {
			if ref.Name == "cmd" {
				c.readsCmd = true
			}
		}
		celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
			c.loops = c.loops || e.Kind() == celast.ComprehensionKind
		}))
		if c.readsCmd && c.literal && known && !t.Commands {
			loc := ast.NativeRep().SourceInfo().GetStartLocation(firstRef(ast, "cmd"))
			problems = append(problems, Problem{Index: i, ID: r.ID, Line: loc.Line(), Col: loc.Column() + 1,
				Msg: fmt.Sprintf("tool %s runs no command, so it has no cmd", r.Tool)})
			continue
		}
		if p, ok := reversedListEquality(ast); ok {
			problems = append(problems, Problem{Index: i, ID: r.ID, Line: p.line, Col: p.col, Msg: p.msg})
			continue
		}
		if p, ok := badGlobPattern(ast); ok {
			problems = append(problems, Problem{Index: i, ID: r.ID, Line: p.line, Col: p.col, Msg: p.msg})
			continue
		}
		prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(interruptEvery))
		if err != nil {
			problems = append(problems, Problem{Index: i, ID: r.ID, Msg: err.Error()})
			continue
		}
		c.prg = prg
	}
	if len(problems) > 0 {
		slices.SortStableFunc(problems, func(a, b Problem) int { return a.Index - b.Index })
		return nil, &CompileError{Problems: problems}
	}
	for name := range catalog {
		var s *shape = dynShape
		if ts, ok := toolShape[name]; ok {
			s = ts
		}
		set.byTool[name] = set.selectFor(name, s)
	}
	return set, nil
}

func anyApplies(rs []Rule, name string) bool {
	for _, r := range rs {
		c := compiled{Rule: r, literal: !strings.ContainsAny(r.Tool, `*?[]{}\`)}
		if c.applies(name) {
			return true
		}
	}
	return false
}

// ToolRules are the rules that can apply to one tool, in policy order.
type ToolRules struct {
	rules []*compiled
	// shape converts the tool's arguments (dyn when its schema is not
	// known).
	shape *shape
}

// Decide evaluates the rules in order; the first that matches decides.
func (tr *ToolRules) Decide(in *Input) Verdict {
	v, _ := tr.eval(in, false)
	return v
}

// Explain is Decide with the evaluation of every rule up to the one that
// decides.
func (tr *ToolRules) Explain(in *Input) (Verdict, []Step) {
	return tr.eval(in, true)
}

func (tr *ToolRules) eval(in *Input, trace bool) (Verdict, []Step) {
	act := &activation{in: in}
	if in.Args == nil {
		in.Args = map[string]any{}
	}
	act.args = convert(in.Args, tr.shape)
	var deadline bounded
	defer deadline.stop()
	var steps []Step
	for _, r := range tr.rules {
		result, detail := "true", ""
		if r.prg != nil {
			var out ref.Val
			var err error
			if r.loops {
				out, _, err = r.prg.ContextEval(deadline.context(), act)
			} else {
				out, _, err = r.prg.Eval(act)
			}
			switch {
			case err != nil:
				result, detail = "error", err.Error()
			case out == types.True:
			case out == types.False:
				result = "false"
			case types.IsUnknown(out):
				result, detail = "unknown", act.unknowable()
			default:
				result, detail = "error", fmt.Sprintf("when gave %v, not a bool", out)
			}
		}
		decides := result == "true" || result != "false" && r.Effect != Allow
		if trace {
			steps = append(steps, Step{Index: r.index, ID: r.ID, Result: result, Detail: detail, Decides: decides})
		}
		if !decides {
			continue
		}
		v := Verdict{Rule: r.ID, Index: r.index, Effect: r.Effect, Reason: r.Reason}
		switch result {
		case "unknown":
			v.Unsure = "the rule may match and toolhost cannot tell: " + detail +
				"; write the command so that the programs it runs and their arguments can be read"
		case "error":
			v.Unsure = "the rule's condition failed (" + detail + "), and a deny or confirm rule that cannot be evaluated applies; " +
				"the policy's rule must be fixed (a field read without has(), a wrong type)"
		}
		return v, steps
	}
	return Verdict{Index: -1}, steps
}

// bounded is the deadline of a call's iterating rules, made on first use
// (a timer per call costs more than evaluating a simple rule).
type bounded struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *bounded) context() context.Context {
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithTimeout(context.Background(), EvalTimeout)
	}
	return b.ctx
}

func (b *bounded) stop() {
	if b.cancel != nil {
		b.cancel()
	}
}

// activation is the variables of one evaluation; cmd is built on first
// use, and the others are made values only when a rule reads them.
type activation struct {
	in   *Input
	args any
	cmd  map[string]any
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "args":
		return a.args, true
	case "cmd":
		if a.cmd == nil {
			var cmds []tool.Command
			if a.in.Commands != nil {
				cmds = a.in.Commands()
			}
			a.cmd = commandFacts(cmds, bashguard.Options{Programs: a.in.Programs})
		}
		return a.cmd, true
	case "tool":
		return types.String(a.in.Tool), true
	case "agent":
		return types.String(a.in.Agent), true
	case "unit":
		return types.String(a.in.Unit), true
	case "project":
		return types.String(a.in.Project), true
	case "now":
		if a.in.Now.IsZero() {
			a.in.Now = time.Now()
		}
		return types.Timestamp{Time: a.in.Now}, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// unknowable says what of the command the parser cannot know.
func (a *activation) unknowable() string {
	if a.cmd == nil {
		return "it depends on what toolhost cannot know"
	}
	var parts []string
	if l, ok := a.cmd["unknowns"].(*factList); ok {
		for _, e := range l.elems {
			m, _ := e.Value().(map[string]any)
			what, _ := m["what"].(string)
			reason, _ := m["reason"].(string)
			if what != "" && what != unknownMark {
				reason += " (" + what + ")"
			}
			parts = append(parts, reason)
			if len(parts) == 3 {
				break
			}
		}
	}
	if len(parts) == 0 {
		return "it depends on what toolhost cannot know of the command"
	}
	return strings.Join(parts, "; ")
}

// firstRef is the id of the first reference to the variable name.
func firstRef(a *cel.Ast, name string) int64 {
	first := int64(-1)
	for id, r := range a.NativeRep().ReferenceMap() {
		if r.Name == name && (first < 0 || id < first) {
			first = id
		}
	}
	return first
}

type located struct {
	line, col int
	msg       string
}

// reversedListEquality finds a == or != whose right side is a list of
// cmd and whose left side is not: CEL compares a list on the left by its
// own rules, which take a fact toolhost does not know for a difference
// (false), while cmd's lists answer unknown. The fact must come first.
func reversedListEquality(a *cel.Ast) (located, bool) {
	native := a.NativeRep()
	// Comprehension variables ranging over cmd (c in cmd.commands) are
	// cmd too.
	fromCmd := map[string]bool{"cmd": true}
	mentions := func(e celast.Expr) bool {
		found := false
		celast.PreOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
			if x.Kind() == celast.IdentKind && fromCmd[x.AsIdent()] {
				found = true
			}
		}))
		return found
	}
	celast.PreOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.ComprehensionKind && mentions(e.AsComprehension().IterRange()) {
			fromCmd[e.AsComprehension().IterVar()] = true
		}
	}))
	var found located
	ok := false
	celast.PreOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if ok || e.Kind() != celast.CallKind {
			return
		}
		call := e.AsCall()
		if (call.FunctionName() != "_==_" && call.FunctionName() != "_!=_") || len(call.Args()) != 2 {
			return
		}
		l, r := call.Args()[0], call.Args()[1]
		if t := native.GetType(r.ID()); t == nil || t.Kind() != types.ListKind || !mentions(r) || mentions(l) {
			return
		}
		loc := native.SourceInfo().GetStartLocation(e.ID())
		found, ok = located{loc.Line(), loc.Column() + 1, "write the fact of cmd on the left of " + strings.Trim(call.FunctionName(), "_") +
			": a list of cmd may hold what toolhost does not know, and only on the left does the comparison say so (unknown) instead of false"}, true
	}))
	return found, ok
}

// badGlobPattern finds a glob() call whose pattern is a constant that is
// not a valid glob, so the mistake shows when the policy loads, not on a
// call.
func badGlobPattern(a *cel.Ast) (located, bool) {
	var found located
	ok := false
	celast.PreOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if ok || e.Kind() != celast.CallKind {
			return
		}
		call := e.AsCall()
		if call.FunctionName() != "glob" || len(call.Args()) != 2 || call.Args()[1].Kind() != celast.LiteralKind {
			return
		}
		p, isStr := call.Args()[1].AsLiteral().(types.String)
		if isStr && !doublestar.ValidatePattern(string(p)) {
			loc := a.NativeRep().SourceInfo().GetStartLocation(call.Args()[1].ID())
			found, ok = located{loc.Line(), loc.Column() + 1, fmt.Sprintf("glob pattern %q is not a valid glob", string(p))}, true
		}
	}))
	return found, ok
}
