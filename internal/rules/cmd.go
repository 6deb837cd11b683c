//go:build !bench_no_rules

package rules

import (
	"encoding/json"
	"slices"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/tool"
)

// cmdSchema is the shape of cmd: the facts of bashguard.Analysis that a
// rule may read, for every command a call would run. It is typed like a
// tool's arguments, so a misspelt fact is an error when the policy loads.
const cmdSchema = `{"type":"object","additionalProperties":false,"properties":{
  "programs":       {"type":"array","items":{"type":"string"}},
  "args":           {"type":"array","items":{"type":"string"}},
  "commands":       {"type":"array","items":{"type":"object","additionalProperties":false,"properties":{
      "name":      {"type":"string"},
      "args":      {"type":"array","items":{"type":"string"}},
      "via":       {"type":"array","items":{"type":"string"}},
      "stdin":     {"type":"string"},
      "redirects": {"type":"array","items":{"type":"object","additionalProperties":false,"properties":{
          "op":     {"type":"string"},
          "target": {"type":"string"}}}},
      "urls":      {"type":"array","items":{"type":"string"}},
      "hosts":     {"type":"array","items":{"type":"string"}},
      "shell":     {"type":"string"},
      "defined":   {"type":"boolean"},
      "function":  {"type":"boolean"}}}},
  "redirects":      {"type":"array","items":{"type":"string"}},
  "urls":           {"type":"array","items":{"type":"string"}},
  "hosts":          {"type":"array","items":{"type":"string"}},
  "runs_shell":     {"type":"boolean"},
  "pipes_to_shell": {"type":"boolean"},
  "unknowable":     {"type":"boolean"},
  "unknowns":       {"type":"array","items":{"type":"object","additionalProperties":false,"properties":{
      "kind":   {"type":"string"},
      "what":   {"type":"string"},
      "reason": {"type":"string"}}}}
}}`

// cmdType is the CEL struct name of cmd.
const cmdType = "cmd"

// unknownMark is how bashguard.Analysis shows a part of a word it cannot
// know (a variable from the environment, a program's output).
const unknownMark = "…"

// Command facts are built from the Analysis of each command a call would
// run, and from nothing else: one parser, one view of a command.
//
// A fact the parser cannot know is unknown to CEL (see unknown and
// factList): a program whose name is computed at run time, an argument,
// URL or redirect target with a part only known when the command runs. A
// command that runs code the parser cannot read (eval "$x", bash -c
// "$(…)", curl … | sh), or a program it cannot name, could run anything:
// then every list of cmd is open (it may hold more than the parser saw) and
// runs_shell and pipes_to_shell are unknown unless known true. A command
// the parser cannot read at all (too long, unparsable, over the guard's
// budget) has no known facts. unknowable is true in all these cases, and
// unknowns says what could not be known and why.
func commandFacts(cmds []tool.Command, o bashguard.Options) map[string]any {
	var b factsBuilder
	for _, c := range cmds {
		var a *bashguard.Analysis
		var err error
		o.Dir = c.Dir
		if c.Argv != nil {
			a, err = bashguard.AnalyzeArgvWith(c.Argv, c.Env, o)
		} else {
			a, err = bashguard.AnalyzeWith(c.Script, o)
		}
		if err != nil {
			b.open = true
			b.unknowns = append(b.unknowns, unknownFact("unreadable", where(c), err.Error()))
			continue
		}
		b.add(a)
	}
	return b.value()
}

func where(c tool.Command) string {
	if c.Where != "" {
		return c.Where
	}
	return "the command"
}

type factsBuilder struct {
	programs, args, redirects, urls, hosts []ref.Val
	commands, unknowns                     []ref.Val
	runsShell, pipesToShell                bool
	open, someUnknown                      bool
	// floats is set when some command's arguments are of unknown number:
	// cmd.args then has no known places either.
	floats bool
}

func (b *factsBuilder) str(s string) ref.Val {
	if strings.Contains(s, unknownMark) {
		b.someUnknown = true
		return unknown()
	}
	return types.String(s)
}

func (b *factsBuilder) add(a *bashguard.Analysis) {
	for _, u := range a.Unknowns {
		if u.Kind == bashguard.UnknownData {
			// Data a program transforms before a client sends it: the
			// guard's concern (inline JSON); no fact of cmd depends on it.
			continue
		}
		b.open = true
		b.unknowns = append(b.unknowns, unknownFact(string(u.Kind), u.What, u.Reason))
	}
	for i := range a.Commands {
		b.command(&a.Commands[i])
	}
}

func (b *factsBuilder) command(c *bashguard.Command) {
	var name ref.Val
	switch {
	case c.Dynamic || c.Name == "":
		b.open = true
		name = unknown()
		b.unknowns = append(b.unknowns, unknownFact("program", strings.Join(c.Args, " "), "the program's name is computed when the command runs"))
	case c.Unsure != "":
		// What runs may not be the program the name says: it could be
		// any, running anything.
		b.open = true
		name = unknown()
		b.unknowns = append(b.unknowns, unknownFact("program", strings.Join(c.Args, " "), c.Unsure))
	default:
		name = b.str(c.Name)
		// A shell function is not a program: what its body runs is.
		if !c.Function && !slices.ContainsFunc(b.programs, func(p ref.Val) bool { return p.Equal(name) == types.True }) {
			b.programs = append(b.programs, name)
		}
	}
	var args []ref.Val
	for i, a := range c.Args {
		if i == 0 {
			continue
		}
		v := b.str(a)
		if types.IsUnknown(v) {
			b.unknowns = append(b.unknowns, unknownFact("argument", a, "part of an argument of "+c.Name+" is only known when the command runs (the environment, a file or a program's output)"))
		}
		args = append(args, v)
	}
	if c.Fixed < len(c.Args) {
		b.floats = true
	}
	b.args = append(b.args, args...)
	argList := &factList{elems: args}
	if c.Fixed < len(c.Args) {
		argList.floats, argList.fixed = true, max(c.Fixed-1, 0)
	}
	var redirects []ref.Val
	for _, r := range c.Redirects {
		t := b.str(r.Target)
		redirects = append(redirects, types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{"op": r.Op, "target": t}))
		if fileRedirect(r) {
			b.redirects = append(b.redirects, t)
		}
	}
	var urls, hosts []ref.Val
	if c.HTTP != nil {
		for _, u := range c.HTTP.URLs {
			urls = append(urls, b.str(u))
		}
		for _, h := range c.HTTP.Hosts {
			hosts = append(hosts, b.str(h))
		}
		b.urls = append(b.urls, urls...)
		b.hosts = append(b.hosts, hosts...)
	}
	shell := ""
	if c.Shell != nil {
		shell = c.Shell.From
		b.runsShell = true
		if c.Shell.From == "stdin" {
			b.pipesToShell = true
		}
		if !c.Shell.Known {
			b.open = true
		}
	}
	via := make([]ref.Val, len(c.Via))
	for i, v := range c.Via {
		via[i] = types.String(v)
	}
	b.commands = append(b.commands, types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{
		"name": name, "args": argList, "via": &factList{elems: via}, "stdin": b.str(c.Stdin),
		"redirects": &factList{elems: redirects}, "urls": &factList{elems: urls}, "hosts": &factList{elems: hosts},
		"shell": shell, "defined": c.Defined, "function": c.Function,
	}))
}

// fileRedirect reports whether r names a file the command reads or
// writes: not a heredoc or here-string, not a descriptor duplication.
func fileRedirect(r bashguard.Redirect) bool {
	op := strings.TrimLeft(r.Op, "0123456789")
	switch op {
	case "<<", "<<-", "<<<":
		return false
	}
	if strings.HasSuffix(op, "&") && (r.Target == "-" || strings.Trim(r.Target, "0123456789") == "") {
		return false
	}
	return true
}

func unknownFact(kind, what, reason string) ref.Val {
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{"kind": kind, "what": what, "reason": reason})
}

func (b *factsBuilder) value() map[string]any {
	list := func(elems []ref.Val) *factList { return &factList{elems: elems, open: b.open} }
	args := list(b.args)
	args.floats = b.floats
	flag := func(known bool) any {
		if !known && b.open {
			return unknown()
		}
		return known
	}
	return map[string]any{
		"programs":       list(b.programs),
		"args":           args,
		"commands":       list(b.commands),
		"redirects":      list(b.redirects),
		"urls":           list(b.urls),
		"hosts":          list(b.hosts),
		"runs_shell":     flag(b.runsShell),
		"pipes_to_shell": flag(b.pipesToShell),
		"unknowable":     b.open || b.someUnknown,
		"unknowns":       &factList{elems: b.unknowns},
	}
}

// FactsJSON renders the cmd facts of cmds as JSON for people (`toolhost
// policy explain`), an unknown fact as null and an open list ending in
// "…".
func FactsJSON(cmds []tool.Command, o bashguard.Options) json.RawMessage {
	b, _ := json.Marshal(plain(commandFacts(cmds, o)))
	return b
}

func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case *factList:
		out := []any{}
		for _, e := range x.elems {
			out = append(out, plain(e))
		}
		if x.open {
			out = append(out, unknownMark)
		}
		return out
	case *types.Unknown:
		return nil
	case ref.Val:
		return plain(x.Value())
	}
	return v
}
