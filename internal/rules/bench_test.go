package rules_test

import (
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/internal/progid"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/tool"
)

// BenchmarkDecide is the cost of the rules for one call: the typed
// conversion of its arguments and the evaluation of one matching CEL rule
// (target ≤ 5 µs), the same for a rule over cmd (the shell parser's
// analysis of the command and finding its programs' files included), and
// the lookup that is all a tool no
// rule names pays.
func BenchmarkDecide(b *testing.B) {
	set, err := rules.Compile([]rules.Rule{
		{ID: "long-make", Tool: "bash", When: "args.timeout_ms > 300000 && args.command.startsWith('make')", Effect: rules.Confirm, Reason: "r"},
		{ID: "no-force-push", Tool: "Bash", When: "cmd.commands.exists(c, c.name == 'git' && c.args.exists(a, a == '--force'))", Effect: rules.Deny, Reason: "r"},
	}, rules.Options{Tools: catalog()})
	if err != nil {
		b.Fatal(err)
	}
	// The engine hands Decide the document validation decoded (numbers as
	// json.Number); decoding is not the rules' cost, but the document is
	// fresh for each call, as Decide converts it in place.
	// Programs are found as serve finds them: on this process's PATH, the
	// known programs' identities kept between calls.
	progs := progid.New(progid.Config{Dir: b.TempDir(), Writable: []string{b.TempDir()}})
	bench := func(name, toolName string, args func() map[string]any, cmds []tool.Command, want string) {
		b.Run(name, func(b *testing.B) {
			tr := set.For(toolName)
			b.ReportAllocs()
			for b.Loop() {
				in := &rules.Input{Tool: toolName, Agent: "devloop-coder", Args: args(), Programs: progs}
				if cmds != nil {
					in.Commands = func() []tool.Command { return cmds }
				}
				if v := tr.Decide(in); v.Rule != want {
					b.Fatalf("verdict %+v", v)
				}
			}
		})
	}
	bench("one_matching_args_rule", "bash", func() map[string]any {
		return map[string]any{"command": "make test", "timeout_ms": json.Number("400000")}
	}, nil, "long-make")
	bench("one_matching_cmd_rule", "Bash", func() map[string]any {
		return map[string]any{"command": "git push --force origin main"}
	}, []tool.Command{{Script: "git push --force origin main"}}, "no-force-push")
	b.Run("no_rule_for_the_tool", func(b *testing.B) {
		for b.Loop() {
			if set.For("write_chapter") != nil {
				b.Fatal("a rule for write_chapter")
			}
		}
	})
}

// BenchmarkCompile50 is the cost of loading a policy with 50 rules
// (once per load in serve, once per call in the hook).
func BenchmarkCompile50(b *testing.B) {
	var rs []rules.Rule
	for i := range 50 {
		r := rules.Rule{ID: "r" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Effect: rules.Deny, Reason: "r"}
		switch i % 5 {
		case 0:
			r.Tool, r.When = "{bash,Bash}", "cmd.programs.exists(p, p == 'prog')"
		case 1:
			r.Tool, r.When = "github__*", "args.repo == 'repo'"
		case 2:
			r.Tool, r.When = "spawn_units", "args.units.exists(u, u.id == 'u')"
		case 3:
			r.Tool, r.When = "Write", "glob(args.file_path, 'dir/**')"
		default:
			r.Tool, r.When = "run_case", "has(args.case_path) && args.case_path.endsWith('.json')"
		}
		rs = append(rs, r)
	}
	cat := catalog()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rules.Compile(rs, rules.Options{Tools: cat}); err != nil {
			b.Fatal(err)
		}
	}
}
