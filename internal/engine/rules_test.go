package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/tool"
)

// TestRulesStage: the rules run after validation and before confirmation;
// deny refuses (kind policy), confirm sends the call to the confirm stage,
// allow lets a confirm tool run unasked; the row and the Call name the
// rule.
func TestRulesStage(t *testing.T) {
	t.Parallel()
	s := &script{}
	shell := tool.New(tool.Spec{Name: "shell", Description: "runs a command", Effect: tool.Destructive,
		Commands: tool.ScriptField("command")}, s.run)
	r := newRig(t, rigOpts{
		tools: []tool.Tool{scripted("echo", tool.ReadOnly, s), scripted("gated", tool.Additive, s), shell},
		policy: map[string]policy.Rule{
			"echo": {Permission: policy.Read}, "gated": {Permission: policy.Write, Confirm: true}, "shell": {Permission: policy.Write},
		},
		rules: []rules.Rule{
			{ID: "no-secrets", Tool: "echo", When: "args.text.contains('secret')", Effect: rules.Deny, Reason: "do not echo secrets"},
			{ID: "ask-big", Tool: "echo", When: "has(args.data) && args.data.size() > 1", Effect: rules.Confirm, Reason: "big data"},
			{ID: "quiet-gated", Tool: "gated", When: "args.text == 'routine'", Effect: rules.Allow},
			{ID: "no-curl", Tool: "shell", When: "'curl' in cmd.programs", Effect: rules.Deny, Reason: "no network"},
		},
	})
	cases := []struct {
		tool, args string
		kind       fault.Kind
		rule, msg  string
	}{
		{"echo", `{"text":"a secret"}`, fault.Policy, "no-secrets", "echo refused by policy rule no-secrets: do not echo secrets"},
		// Validation comes first: an invalid call never reaches a rule.
		{"echo", `{"text":""}`, fault.Validation, "", "text"},
		{"echo", `{"text":"x","data":{"a":1,"b":2}}`, fault.NeedsConfirmation, "ask-big", "needs_confirmation: policy rule ask-big asks for a human's confirmation: big data"},
		{"echo", `{"text":"x","data":{"a":1}}`, fault.None, "", ""},
		{"gated", `{"text":"routine"}`, fault.None, "quiet-gated", ""},
		{"gated", `{"text":"other"}`, fault.NeedsConfirmation, "", "needs_confirmation: gated must be confirmed"},
		{"shell", `{"text":"t","command":"ls && curl -s http://x"}`, fault.Policy, "no-curl", "shell refused by policy rule no-curl: no network"},
		{"shell", `{"text":"t","command":"$NET http://x"}`, fault.Policy, "no-curl", "toolhost cannot tell"},
		{"shell", `{"text":"t","command":"ls"}`, fault.None, "", ""},
	}
	for i, tc := range cases {
		out := r.call(t, tc.tool, tc.args)
		if out.Kind != tc.kind || !strings.Contains(out.Message, tc.msg) {
			t.Errorf("%s %s: %s, want kind %s with %q", tc.tool, tc.args, describe(out), tc.kind, tc.msg)
		}
		rows := r.sink.all()
		if got := rows[len(rows)-1].Rule; got != tc.rule {
			t.Errorf("case %d: audit row's rule %q, want %q", i, got, tc.rule)
		}
	}
}

// fiftyRules are rules on tools other than the benchmark's: literal names
// and globs, each with a condition.
func fiftyRules() []rules.Rule {
	var rs []rules.Rule
	for i := range 50 {
		r := rules.Rule{ID: fmt.Sprintf("r%02d", i), Effect: rules.Deny, Reason: "r"}
		switch i % 4 {
		case 0:
			r.Tool, r.When = "shell", fmt.Sprintf("cmd.programs.exists(p, p == 'prog%d')", i)
		case 1:
			r.Tool, r.When = "github__*", fmt.Sprintf("args.repo == 'repo%d'", i)
		case 2:
			r.Tool, r.When = "{gated,Write}", fmt.Sprintf("tool.size() > %d", i)
		default:
			r.Tool, r.When, r.Effect = "gated", fmt.Sprintf("args.text == 'x%d'", i), rules.Confirm
		}
		rs = append(rs, r)
	}
	return rs
}

// BenchmarkCallRules runs the pipeline's cheap call with no rules, with 50
// rules none of which can apply to the tool (one lookup: the arguments are
// not looked at again), and with one rule that applies and matches
// (allow), whose evaluation the call then pays for. The rigs without and
// with the 50 rules run in alternating blocks of 200 calls in one loop (an
// iteration is one block of each), so a shared machine's load falls on
// both alike; the overhead is the median of the blocks' ratios.
func BenchmarkCallRules(b *testing.B) {
	mk := func(rs []rules.Rule) *rig {
		return newRig(b, rigOpts{
			tools:  []tool.Tool{scripted("echo", tool.ReadOnly, &script{}), scripted("gated", tool.Additive, &script{})},
			policy: map[string]policy.Rule{"echo": {Permission: policy.Read, TimeoutMS: 1000}, "gated": {Permission: policy.Write}},
			rules:  rs,
		})
	}
	req := engine.Request{Tool: "echo", Args: json.RawMessage(`{"text":"hello","data":{"n":1}}`)}
	ctx := context.Background()
	b.Run("interleaved", func(b *testing.B) {
		none, fifty := mk(nil), mk(fiftyRules())
		none.eng.Audit, fifty.eng.Audit = nil, nil
		const block = 200
		var ratios []float64
		var tNone, tFifty time.Duration
		run := func(r *rig) time.Duration {
			t0 := time.Now()
			for range block {
				if out := r.eng.Call(ctx, req); out.IsError {
					b.Fatal(out.Message)
				}
			}
			return time.Since(t0)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			// Blocks alternate which rig goes first.
			var a, f time.Duration
			if i%2 == 0 {
				a, f = run(none), run(fifty)
			} else {
				f, a = run(fifty), run(none)
			}
			tNone, tFifty = tNone+a, tFifty+f
			ratios = append(ratios, float64(f)/float64(a))
		}
		slices.Sort(ratios)
		n := float64(b.N * block)
		b.ReportMetric(float64(tNone)/n, "ns/call-no-rules")
		b.ReportMetric(float64(tFifty)/n, "ns/call-50-rules")
		b.ReportMetric(100*(ratios[len(ratios)/2]-1), "median-%-overhead")
	})
	b.Run("one_matching_rule", func(b *testing.B) {
		r := mk([]rules.Rule{{ID: "hello", Tool: "echo", When: "args.text.startsWith('hel') && args.data.n > 0", Effect: rules.Allow}})
		r.eng.Audit = nil
		b.ReportAllocs()
		for b.Loop() {
			if out := r.eng.Call(ctx, req); out.IsError {
				b.Fatal(out.Message)
			}
		}
	})
}
