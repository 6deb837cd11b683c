package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/testutil/spantest"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/trace/otlp"
)

// tracedSession is a real OpenTelemetry SDK session whose spans go to exp
// and whose metrics are discarded.
func tracedSession(t testing.TB, exp sdktrace.SpanExporter) (*trace.Session, func()) {
	t.Helper()
	p, err := otlp.New(otlp.Exporters{Spans: exp, Metrics: spantest.DiscardMetrics{}}, trace.Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Session(trace.Identity{SessionID: "sess-1", Agent: "tester", ProjectID: "p1"})
	flush := func() {
		s.End()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return s, flush
}

// TestTracedPipeline: a traced call has one span with the pipeline's
// outcome on it, a validation span below it, a span per attempt only when
// it was retried, and a confirmation span when a human was asked.
func TestTracedPipeline(t *testing.T) {
	mem := spantest.NewKept()
	ts, flush := tracedSession(t, mem)
	flaky := &script{faults: []error{tool.Transient(errors.New("reset")), nil}}
	r := newRig(t, rigOpts{
		tools: []tool.Tool{scripted("fetch", tool.ReadOnly, flaky), scripted("guarded_write", tool.Destructive, &script{}),
			scripted("once", tool.ReadOnly, &script{})},
		policy: map[string]policy.Rule{"fetch": {Permission: policy.Read, MaxRetries: 2}, "once": {Permission: policy.Read},
			"guarded_write": {Permission: policy.Write, Confirm: true}},
		trace: ts,
	})
	mustText(t, r.call(t, "fetch", `{"text":"a"}`))
	mustText(t, r.call(t, "once", `{"text":"a"}`))
	if out := r.call(t, "once", `{"text":""}`); out.Kind != fault.Validation {
		t.Fatalf("empty text: %s", describe(out))
	}
	if out := r.call(t, "guarded_write", `{"text":"a"}`); out.Kind != fault.NeedsConfirmation {
		t.Fatalf("guarded_write without elicitation: %s", describe(out))
	}
	flush()
	spans := mem.GetSpans()

	fetch := spantest.Named(spans, "tools/call fetch")
	if len(fetch) != 1 || spantest.Attr(fetch[0], "toolhost.retries") != int64(1) || spantest.Attr(fetch[0], "toolhost.status") != "ok" {
		t.Fatalf("fetch: one span with its retry: %v", fetch)
	}
	var attempts []tracetest.SpanStub
	for _, s := range spantest.Named(spans, "attempt") {
		if s.Parent.SpanID() == fetch[0].SpanContext.SpanID() {
			attempts = append(attempts, s)
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("a call retried once has two attempt spans, got %d", len(attempts))
	}
	for _, a := range attempts {
		n := spantest.Attr(a, "toolhost.attempt")
		if failed := a.Status.Code == codes.Error; failed != (n == int64(1)) {
			t.Errorf("attempt %v: status %v (only the first failed)", n, a.Status)
		}
	}
	once := spantest.Named(spans, "tools/call once")
	if len(once) != 2 {
		t.Fatalf("once: two calls, two spans: %d", len(once))
	}
	for _, s := range spantest.Named(spans, "attempt") {
		for _, o := range once {
			if s.Parent.SpanID() == o.SpanContext.SpanID() {
				t.Errorf("a call that ran once has no attempt span")
			}
		}
	}
	var refused tracetest.SpanStub
	for _, o := range once {
		if spantest.Attr(o, "toolhost.rejection.kind") == "validation" {
			refused = o
		}
	}
	if spantest.Attr(refused, "error.type") != "tool_error" || refused.Status.Code != codes.Error {
		t.Errorf("the refused call's span: %v %v", refused.Attributes, refused.Status)
	}
	validates := spantest.Named(spans, "validate")
	if len(validates) != 4 {
		t.Errorf("every call that got past the permission has a validate span: %d", len(validates))
	}
	confirms := spantest.Named(spans, "confirm")
	if len(confirms) != 1 || spantest.Attr(confirms[0], "error.type") != "needs_confirmation" {
		t.Errorf("only the confirm tool has a confirm span, ending in needs_confirmation: %v", confirms)
	}
}

// TestTracedRules: the rule that decided a call is on its span (id and
// effect), a rule's confirm gives the call a confirm span as the tool's
// own confirm does, and a call no rule decided names none.
func TestTracedRules(t *testing.T) {
	mem := spantest.NewKept()
	ts, flush := tracedSession(t, mem)
	s := &script{}
	r := newRig(t, rigOpts{
		tools:  []tool.Tool{scripted("echo", tool.ReadOnly, s), scripted("gated", tool.Additive, s)},
		policy: map[string]policy.Rule{"echo": {Permission: policy.Read}, "gated": {Permission: policy.Write, Confirm: true}},
		rules: []rules.Rule{
			{ID: "no-secrets", Tool: "echo", When: "args.text.contains('secret')", Effect: rules.Deny, Reason: "do not echo secrets"},
			{ID: "ask-big", Tool: "echo", When: "args.text == 'big'", Effect: rules.Confirm, Reason: "big"},
			{ID: "quiet-gated", Tool: "gated", When: "args.text == 'routine'", Effect: rules.Allow},
		},
		trace: ts,
	})
	cases := []struct {
		tool, text, id string
		rule, effect   any
		kind           fault.Kind
		confirmSpan    bool
	}{
		{"echo", "a secret", "c-deny", "no-secrets", "deny", fault.Policy, false},
		{"echo", "big", "c-confirm", "ask-big", "confirm", fault.NeedsConfirmation, true},
		{"gated", "routine", "c-allow", "quiet-gated", "allow", fault.None, false},
		{"echo", "plain", "c-none", nil, nil, fault.None, false},
	}
	for _, tc := range cases {
		out := r.eng.Call(context.Background(), engine.Request{Tool: tc.tool, Args: json.RawMessage(`{"text":"` + tc.text + `"}`),
			Meta: callctx.Meta{CallID: tc.id}})
		if out.Kind != tc.kind {
			t.Fatalf("%s: %s, want kind %s", tc.id, describe(out), tc.kind)
		}
	}
	flush()
	spans := mem.GetSpans()
	for _, tc := range cases {
		var call []tracetest.SpanStub
		for _, sp := range spans {
			if spantest.Attr(sp, "gen_ai.tool.call.id") == tc.id {
				call = append(call, sp)
			}
		}
		if len(call) != 1 {
			t.Fatalf("%s: %d spans", tc.id, len(call))
		}
		if got, eff := spantest.Attr(call[0], "toolhost.rule.id"), spantest.Attr(call[0], "toolhost.rule.effect"); got != tc.rule || eff != tc.effect {
			t.Errorf("%s: rule %v effect %v, want %v %v", tc.id, got, eff, tc.rule, tc.effect)
		}
		confirms := 0
		for _, sp := range spantest.Named(spans, "confirm") {
			if sp.Parent.SpanID() == call[0].SpanContext.SpanID() {
				confirms++
			}
		}
		if (confirms == 1) != tc.confirmSpan {
			t.Errorf("%s: %d confirm spans, want one: %v", tc.id, confirms, tc.confirmSpan)
		}
	}
}

// TestUntracedCallPassesTheCallersContextOn: without a session, a tool
// still sees the caller's traceparent as the current context (what
// upstream clients and commands are given).
func TestUntracedCallPassesTheCallersContextOn(t *testing.T) {
	var seen string
	probe := tool.New(tool.Spec{Name: "probe", Description: "reports the trace context", Effect: tool.ReadOnly},
		func(ctx context.Context, _ *callctx.Ctx, _ EchoIn) (EchoOut, error) {
			seen, _ = trace.Context(ctx)
			return EchoOut{Status: tool.Status{OK: true}}, nil
		})
	r := newRig(t, rigOpts{tools: []tool.Tool{probe}, policy: map[string]policy.Rule{"probe": {Permission: policy.Read}}})
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	out := r.eng.Call(context.Background(), engine.Request{Tool: "probe", Args: json.RawMessage(`{"text":"a"}`), Meta: callctx.Meta{Traceparent: tp}})
	mustText(t, out)
	if seen != tp {
		t.Fatalf("the tool saw %q, want the caller's %q", seen, tp)
	}
	out = r.eng.Call(context.Background(), engine.Request{Tool: "probe", Args: json.RawMessage(`{"text":"a"}`)})
	mustText(t, out)
	if seen != "" {
		t.Fatalf("without a traceparent there is no context: %q", seen)
	}
}
