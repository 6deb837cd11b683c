package trace_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/spantest"
	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/trace/otlp"
)

// recorded is a session whose spans go to memory.
func recorded(t *testing.T, o trace.Options) (*trace.Session, spantest.Kept, func() []tracetest.SpanStub) {
	t.Helper()
	mem := spantest.NewKept()
	if o.Log.GetLevel() == zerolog.TraceLevel {
		o.Log = zerolog.Nop()
	}
	p, err := otlp.New(otlp.Exporters{Spans: mem, Metrics: spantest.DiscardMetrics{}}, o)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Session(trace.Identity{SessionID: "sess-1", Agent: "coder", ProjectID: "p1"})
	flush := func() []tracetest.SpanStub {
		s.End()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return mem.GetSpans()
	}
	return s, mem, flush
}

func TestRequestAndCallSpans(t *testing.T) {
	spantest.ClearEnv(t)
	s, _, flush := recorded(t, trace.Options{Args: true})
	ctx := trace.WithTransport(context.Background(), trace.Transport{Network: "tcp", Protocol: "http", Version: "1.1", SessionID: "mcp-1"})
	parent := trace.Parent{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}

	// A refused call: isError.
	ctx1, r := s.Request(ctx, "tools/call", json.RawMessage(`"req-7"`))
	ctx1 = trace.Begin(ctx1, parent, "2026-07-28", "echo")
	ctx1, call := s.Call(ctx1, "echo", "call-1", trace.Parent{})
	sctx := call.Stage(ctx1, trace.Validate)
	call.EndStage(sctx, fault.Validation)
	call.End(trace.Outcome{Status: audit.StatusRejected, Kind: fault.Validation, IsError: true, Message: "text: too short", Permission: "read",
		Args: json.RawMessage(`{"token":"[REDACTED]"}`)})
	r.End(0, "")

	// A JSON-RPC error refused before its _meta was read.
	_, r2 := s.Request(ctx, "tools/list", json.RawMessage(`3`))
	r2.End(-32602, "bad cursor")

	// A call without a request (toolhost call): its own span.
	_, own := s.Call(context.Background(), "echo", "call-2", parent)
	own.End(trace.Outcome{Status: audit.StatusOK})

	spans := flush()
	sess := spantest.Named(spans, "toolhost session")[0]
	call1 := spantest.Named(spans, "tools/call echo")
	if len(call1) != 2 {
		t.Fatalf("want two tools/call echo spans, got %d", len(call1))
	}
	req := call1[0]
	if spantest.Attr(req, "gen_ai.tool.call.id") != "call-1" {
		req = call1[1]
	}
	for k, v := range map[string]any{"mcp.method.name": "tools/call", "jsonrpc.request.id": "req-7", "mcp.protocol.version": "2026-07-28",
		"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1", "mcp.session.id": "mcp-1",
		"gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool", "error.type": "tool_error",
		"toolhost.status": "rejected", "toolhost.rejection.kind": "validation", "toolhost.policy.permission": "read",
		"gen_ai.tool.call.arguments": `{"token":"[REDACTED]"}`} {
		if got := spantest.Attr(req, k); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if req.SpanKind.String() != "server" || req.Status.Code != codes.Error || req.Status.Description != "text: too short" {
		t.Errorf("request span: kind %v status %v", req.SpanKind, req.Status)
	}
	if req.Parent.SpanID().String() != "00f067aa0ba902b7" || len(req.Links) != 1 || req.Links[0].SpanContext.SpanID() != sess.SpanContext.SpanID() {
		t.Errorf("parent %v links %v: the caller's span, linked to the session", req.Parent.SpanID(), req.Links)
	}
	v := spantest.Named(spans, trace.Validate)[0]
	if v.Parent.SpanID() != req.SpanContext.SpanID() || spantest.Attr(v, "error.type") != "validation" || v.Status.Code != codes.Error {
		t.Errorf("validate span: parent %v attrs %v status %v", v.Parent.SpanID(), v.Attributes, v.Status)
	}
	list := spantest.Named(spans, "tools/list")[0]
	if spantest.Attr(list, "error.type") != "-32602" || spantest.Attr(list, "rpc.response.status_code") != "-32602" || list.Status.Description != "bad cursor" ||
		list.Parent.SpanID() != sess.SpanContext.SpanID() {
		t.Errorf("tools/list span: %v %v parent %v", list.Attributes, list.Status, list.Parent.SpanID())
	}
	ownSpan := call1[0]
	if spantest.Attr(ownSpan, "gen_ai.tool.call.id") != "call-2" {
		ownSpan = call1[1]
	}
	if ownSpan.SpanKind.String() != "internal" || ownSpan.Parent.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || spantest.Attr(ownSpan, "error.type") != nil {
		t.Errorf("own call span: kind %v parent %v attrs %v", ownSpan.SpanKind, ownSpan.Parent, ownSpan.Attributes)
	}
	for _, sp := range spans {
		if len(sp.Resource.Attributes()) == 0 {
			t.Fatal("no resource")
		}
	}
	if got, _ := sess.Resource.Set().Value("service.instance.id"); got.AsString() != "sess-1" {
		t.Errorf("the session is the resource's service.instance.id: %v", sess.Resource)
	}
}

// TestNoArgumentsWithoutTraceArgs: the message and arguments stay off the
// spans unless --trace-args.
func TestNoArgumentsWithoutTraceArgs(t *testing.T) {
	spantest.ClearEnv(t)
	s, _, flush := recorded(t, trace.Options{})
	_, call := s.Call(context.Background(), "echo", "c", trace.Parent{})
	call.End(trace.Outcome{Status: audit.StatusRejected, Kind: fault.Guard, IsError: true, Message: "curl -d '{\"password\":\"x\"}'", Args: json.RawMessage(`{"a":1}`), Result: json.RawMessage(`{"b":2}`)})
	sp := flush()
	c := spantest.Named(sp, "tools/call echo")[0]
	if spantest.Attr(c, "gen_ai.tool.call.arguments") != nil || spantest.Attr(c, "gen_ai.tool.call.result") != nil || c.Status.Description != "guard" {
		t.Fatalf("without --trace-args: attrs %v status %v", c.Attributes, c.Status)
	}
}

func TestRetriedAttempts(t *testing.T) {
	spantest.ClearEnv(t)
	s, _, flush := recorded(t, trace.Options{})
	ctx, call := s.Call(context.Background(), "fetch", "c", trace.Parent{})
	actx, a := call.Attempt(ctx, 1, "web", "lookup")
	if tp, _ := trace.Context(actx); !strings.Contains(tp, "-") {
		t.Fatal("an upstream attempt carries the client span's context")
	}
	a.End(fault.Timeout, false)
	_, a2 := call.Attempt(ctx, 2, "web", "lookup")
	a2.End(fault.None, true)
	call.End(trace.Outcome{Status: audit.StatusError, Kind: fault.Upstream, IsError: true, Retries: 1})
	spans := flush()
	attempts := spantest.Named(spans, "attempt")
	clients := spantest.Named(spans, "tools/call lookup")
	if len(attempts) != 2 || len(clients) != 2 {
		t.Fatalf("a retried call: two attempt and two client spans, got %d and %d", len(attempts), len(clients))
	}
	var first, second tracetest.SpanStub
	for _, sp := range attempts {
		switch spantest.Attr(sp, "toolhost.attempt") {
		case int64(1):
			first = sp
		case int64(2):
			second = sp
		}
	}
	if spantest.Attr(first, "error.type") != "timeout" || first.Status.Code != codes.Error || !first.EndTime.Before(second.StartTime) {
		t.Errorf("attempt 1 (recorded at the retry): %v %v, ends %v before attempt 2 starts %v", first.Attributes, first.Status, first.EndTime, second.StartTime)
	}
	if spantest.Attr(second, "error.type") != "tool_error" {
		t.Errorf("attempt 2 answered isError: %v", second.Attributes)
	}
	for _, c := range clients {
		if c.SpanKind.String() != "client" || spantest.Attr(c, "toolhost.upstream") != "web" || spantest.Attr(c, "gen_ai.tool.name") != "lookup" {
			t.Errorf("client span: %v %v", c.SpanKind, c.Attributes)
		}
	}
}

func TestSessionContinuesTraceparentOfTheEnvironment(t *testing.T) {
	spantest.ClearEnv(t)
	t.Setenv("TRACEPARENT", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	_, _, flush := recorded(t, trace.Options{})
	sess := spantest.Named(flush(), "toolhost session")[0]
	if sess.Parent.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || sess.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("session span parent %v", sess.Parent)
	}
}

// procOwner starts children with procs.Spawn; nothing else of procs.Owner
// is used here.
type procOwner struct{ procs.Owner }

func (procOwner) Spawn(spec procs.Spec) (*procs.Child, error) { return procs.Spawn(spec) }

func TestSpawnedCommandGetsItsSpanInTRACEPARENT(t *testing.T) {
	spantest.ClearEnv(t)
	s, _, flush := recorded(t, trace.Options{})
	ctx, call := s.Call(context.Background(), "bash", "c", trace.Parent{})
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	o := trace.Procs(ctx, procOwner{}, s)
	child, err := o.Spawn(procs.Spec{Name: "bash", Argv: []string{"/bin/sh", "-c", "echo $TRACEPARENT; exit 3"},
		Env: []string{"PATH=/usr/bin:/bin", "TRACEPARENT=00-stale"}, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	<-child.Done()
	call.End(trace.Outcome{Status: audit.StatusOK})
	spans := flush()
	spawn := spantest.Named(spans, "spawn bash")
	if len(spawn) != 1 {
		t.Fatalf("want one spawn bash span, got %d", len(spawn))
	}
	b, _ := os.ReadFile(out.Name())
	want := "00-" + spawn[0].SpanContext.TraceID().String() + "-" + spawn[0].SpanContext.SpanID().String() + "-01"
	if strings.TrimSpace(string(b)) != want {
		t.Errorf("the command saw TRACEPARENT=%q, want %q", b, want)
	}
	if spantest.Attr(spawn[0], "process.exit.code") != int64(3) || spantest.Attr(spawn[0], "process.pid") != int64(child.PID) || spantest.Attr(spawn[0], "process.executable.name") != "sh" {
		t.Errorf("spawn span attrs %v", spawn[0].Attributes)
	}
}

// A retry's trace.Procs is given the first attempt's owner (the engine leaves it
// on the call's Ctx): a command the retry spawns hangs below the retry
// alone, with one span, not below both attempts.
func TestProcsOfARetryWrapsTheSessionsOwner(t *testing.T) {
	spantest.ClearEnv(t)
	s, _, flush := recorded(t, trace.Options{})
	ctx, call := s.Call(context.Background(), "bash", "c", trace.Parent{})
	ctx1, a1 := call.Attempt(ctx, 1, "", "")
	first := trace.Procs(ctx1, procOwner{}, s)
	a1.End(fault.Timeout, false)
	ctx2, a2 := call.Attempt(ctx, 2, "", "")
	child, err := trace.Procs(ctx2, first, s).Spawn(procs.Spec{Name: "bash", Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	<-child.Done()
	a2.End(fault.None, false)
	call.End(trace.Outcome{Status: audit.StatusOK, Retries: 1})
	spans := flush()
	spawn := spantest.Named(spans, "spawn bash")
	if len(spawn) != 1 {
		t.Fatalf("want one spawn bash span, got %d", len(spawn))
	}
	if want := oteltrace.SpanContextFromContext(ctx2).SpanID(); spawn[0].Parent.SpanID() != want {
		t.Errorf("spawn span's parent %v, want the retry's span %v", spawn[0].Parent.SpanID(), want)
	}
}

// TestSpanAPILinksNoExporter: the packages that open spans link the
// OpenTelemetry API only; the SDK, the OTLP exporters and gRPC come in
// through trace/otlp, which only the CLI imports.
func TestSpanAPILinksNoExporter(t *testing.T) {
	t.Parallel()
	mod := "github.com/toolhost/toolhost/internal/"
	testutil.NoDeps(t, []string{mod + "trace", mod + "engine", mod + "server", mod + "httpserve", mod + "upstream"},
		"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "google.golang.org/grpc", mod+"trace/otlp")
}
