package trace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/spantest"
)

// clearEnv unsets every OTEL_* and TRACE* variable for the test.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || k == "TRACEPARENT" || k == "TRACESTATE" {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestFromEnvExportsOnlyWhenAsked(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"otlp named", map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, true},
		{"both none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, false},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{"only an exporter toolhost lacks", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "prometheus"}, false},
		{"service name alone", map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			logs := &testutil.SyncBuffer{}
			before := runtime.NumGoroutine()
			p, err := FromEnv(context.Background(), Options{Log: zerolog.New(logs)})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background())
			if (p != nil) != c.want {
				t.Fatalf("FromEnv = %v, want a provider: %v", p, c.want)
			}
			if p == nil && runtime.NumGoroutine() != before {
				t.Errorf("nothing exported, yet goroutines went from %d to %d", before, runtime.NumGoroutine())
			}
			if strings.Contains(c.name, "lacks") && !strings.Contains(logs.String(), `"exporter":"console"`) {
				t.Errorf("an exporter toolhost does not ship is logged: %s", logs)
			}
		})
	}
}

// TestNilIsFree: without a provider every hook is a nil check and the
// engine's entry points return what they were given.
func TestNilIsFree(t *testing.T) {
	var p *Provider
	s := p.Session(Identity{SessionID: "s"})
	if s != nil || s.Args() {
		t.Fatal("a nil provider has no session")
	}
	s.End()
	s.AuditFailed()
	ctx := context.Background()
	got, call := s.Call(ctx, "t", "c", Parent{})
	if got != ctx || call != nil {
		t.Fatal("Call without a session and without a parent must return ctx unchanged")
	}
	call.End(Outcome{})
	var r *Request
	r.End(0, "")
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPropagatesWithoutExporting: a caller's traceparent still reaches
// upstreams and commands when nothing is exported.
func TestPropagatesWithoutExporting(t *testing.T) {
	var s *Session
	ctx, _ := s.Call(context.Background(), "t", "c", Parent{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "a=b"})
	tp, ts := Context(ctx)
	if tp != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || ts != "a=b" {
		t.Fatalf("Context = %q %q", tp, ts)
	}
	env := env(ctx, []string{"PATH=/bin", "TRACEPARENT=00-old-old-01", "TRACESTATE=old"})
	want := []string{"PATH=/bin", "TRACEPARENT=" + tp, "TRACESTATE=a=b"}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Fatalf("env = %v, want %v", env, want)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		ctx, _ := s.Call(context.Background(), "t", "c", Parent{Traceparent: bad})
		if tp, _ := Context(ctx); tp != "" {
			t.Errorf("invalid traceparent %q must be ignored, got %q", bad, tp)
		}
	}
}

// recorded is a session whose spans go to memory.
func recorded(t *testing.T, o Options) (*Session, spantest.Kept, func() []tracetest.SpanStub) {
	t.Helper()
	mem := spantest.NewKept()
	if o.Log.GetLevel() == zerolog.TraceLevel {
		o.Log = zerolog.Nop()
	}
	p, err := New(Exporters{Spans: mem, Metrics: spantest.DiscardMetrics{}}, o)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Session(Identity{SessionID: "sess-1", Agent: "coder", ProjectID: "p1"})
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
	clearEnv(t)
	s, _, flush := recorded(t, Options{Args: true})
	ctx := WithTransport(context.Background(), Transport{Network: "tcp", Protocol: "http", Version: "1.1", SessionID: "mcp-1"})
	parent := Parent{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}

	// A refused call: isError.
	ctx1, r := s.Request(ctx, "tools/call", json.RawMessage(`"req-7"`))
	ctx1 = Begin(ctx1, parent, "2026-07-28", "echo")
	ctx1, call := s.Call(ctx1, "echo", "call-1", Parent{})
	sctx := call.Stage(ctx1, Validate)
	call.EndStage(sctx, &fakeRejection{fault.Validation})
	call.End(Outcome{Status: "rejected", Kind: "validation", IsError: true, Message: "text: too short", Permission: "read",
		Args: json.RawMessage(`{"token":"[REDACTED]"}`)})
	r.End(0, "")

	// A JSON-RPC error refused before its _meta was read.
	_, r2 := s.Request(ctx, "tools/list", json.RawMessage(`3`))
	r2.End(-32602, "bad cursor")

	// A call without a request (toolhost call): its own span.
	_, own := s.Call(context.Background(), "echo", "call-2", parent)
	own.End(Outcome{Status: "ok"})

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
	v := spantest.Named(spans, Validate)[0]
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
	clearEnv(t)
	s, _, flush := recorded(t, Options{})
	_, call := s.Call(context.Background(), "echo", "c", Parent{})
	call.End(Outcome{Status: "rejected", Kind: "guard", IsError: true, Message: "curl -d '{\"password\":\"x\"}'", Args: json.RawMessage(`{"a":1}`), Result: json.RawMessage(`{"b":2}`)})
	sp := flush()
	c := spantest.Named(sp, "tools/call echo")[0]
	if spantest.Attr(c, "gen_ai.tool.call.arguments") != nil || spantest.Attr(c, "gen_ai.tool.call.result") != nil || c.Status.Description != "guard" {
		t.Fatalf("without --trace-args: attrs %v status %v", c.Attributes, c.Status)
	}
}

func TestRetriedAttempts(t *testing.T) {
	clearEnv(t)
	s, _, flush := recorded(t, Options{})
	ctx, call := s.Call(context.Background(), "fetch", "c", Parent{})
	actx, a := call.Attempt(ctx, 1, "web", "lookup")
	if tp, _ := Context(actx); !strings.Contains(tp, "-") {
		t.Fatal("an upstream attempt carries the client span's context")
	}
	a.End(context.DeadlineExceeded, false)
	_, a2 := call.Attempt(ctx, 2, "web", "lookup")
	a2.End(nil, true)
	call.End(Outcome{Status: "error", Kind: "upstream", IsError: true, Retries: 1})
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
	clearEnv(t)
	t.Setenv("TRACEPARENT", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	_, _, flush := recorded(t, Options{})
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
	clearEnv(t)
	s, _, flush := recorded(t, Options{})
	ctx, call := s.Call(context.Background(), "bash", "c", Parent{})
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	o := Procs(ctx, procOwner{}, s)
	child, err := o.Spawn(procs.Spec{Name: "bash", Argv: []string{"/bin/sh", "-c", "echo $TRACEPARENT; exit 3"},
		Env: []string{"PATH=/usr/bin:/bin", "TRACEPARENT=00-stale"}, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	<-child.Done()
	call.End(Outcome{Status: "ok"})
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

// A retry's Procs is given the first attempt's owner (the engine leaves it
// on the call's Ctx): a command the retry spawns hangs below the retry
// alone, with one span, not below both attempts.
func TestProcsOfARetryWrapsTheSessionsOwner(t *testing.T) {
	clearEnv(t)
	s, _, flush := recorded(t, Options{})
	ctx, call := s.Call(context.Background(), "bash", "c", Parent{})
	ctx1, a1 := call.Attempt(ctx, 1, "", "")
	first := Procs(ctx1, procOwner{}, s)
	a1.End(context.DeadlineExceeded, false)
	ctx2, a2 := call.Attempt(ctx, 2, "", "")
	child, err := Procs(ctx2, first, s).Spawn(procs.Spec{Name: "bash", Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	<-child.Done()
	a2.End(nil, false)
	call.End(Outcome{Status: "ok", Retries: 1})
	spans := flush()
	spawn := spantest.Named(spans, "spawn bash")
	if len(spawn) != 1 {
		t.Fatalf("want one spawn bash span, got %d", len(spawn))
	}
	if want := oteltrace.SpanContextFromContext(ctx2).SpanID(); spawn[0].Parent.SpanID() != want {
		t.Errorf("spawn span's parent %v, want the retry's span %v", spawn[0].Parent.SpanID(), want)
	}
}

type fakeRejection struct{ k fault.Kind }

func (f *fakeRejection) Error() string             { return "refused" }
func (f *fakeRejection) RejectionKind() fault.Kind { return f.k }

// flakyExporter fails while down is set, and can hang until released.
type flakyExporter struct {
	tries   atomic.Int32
	down    atomic.Bool
	hang    chan struct{}
	mu      sync.Mutex
	batches [][]sdktrace.ReadOnlySpan
}

func (f *flakyExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	f.tries.Add(1)
	if f.hang != nil {
		select {
		case <-f.hang:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.down.Load() {
		return errors.New("connection refused")
	}
	f.mu.Lock()
	f.batches = append(f.batches, spans)
	f.mu.Unlock()
	return nil
}

func (f *flakyExporter) Shutdown(context.Context) error { return nil }

func TestExportFailureIsLoggedOnce(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	exp := &flakyExporter{}
	exp.down.Store(true)
	logs := &testutil.SyncBuffer{}
	p, _ := New(Exporters{Spans: exp}, Options{Log: zerolog.New(logs)})
	s := p.Session(Identity{SessionID: "s"})
	end := func(n int) {
		for range n {
			_, c := s.Call(context.Background(), "t", "c", Parent{})
			c.End(Outcome{Status: "ok"})
		}
		time.Sleep(50 * time.Millisecond)
	}
	end(5)
	end(5)
	if n := strings.Count(logs.String(), "otel_export_failed"); n != 1 {
		t.Fatalf("a failing collector is logged once, got %d times:\n%s", n, logs)
	}
	if n := exp.tries.Load(); n != 1 {
		t.Fatalf("a collector that failed is tried again after 1 s, not per batch: %d tries in ~100 ms", n)
	}
	// While it is down, the next try waits (1 s, then longer): the batches
	// in between are dropped without being encoded or sent.
	exp.down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "otel_export_recovered") {
		if time.Now().After(deadline) {
			t.Fatalf("the recovery is logged:\n%s", logs)
		}
		end(1)
	}
	exp.down.Store(true)
	end(2)
	// Down at shutdown: what is queued is dropped at once, not waited for.
	_, c := s.Call(context.Background(), "t", "c", Parent{})
	c.End(Outcome{Status: "ok"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "otel_export_dropped") {
		t.Errorf("what a dead collector cost is logged at shutdown:\n%s", logs)
	}
}

// TestHangingExporterBoundsMemoryAndShutdown: while an export hangs, spans
// beyond the queue are dropped (never blocking the caller), and Shutdown
// returns when its context ends.
func TestHangingExporterBoundsMemoryAndShutdown(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "100")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10")
	exp := &flakyExporter{hang: make(chan struct{})}
	logs := &testutil.SyncBuffer{}
	p, _ := New(Exporters{Spans: exp}, Options{Log: zerolog.New(logs)})
	s := p.Session(Identity{SessionID: "s"})
	for range 1000 {
		_, c := s.Call(context.Background(), "t", "c", Parent{})
		c.End(Outcome{Status: "ok"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a flush that could not finish reports it")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return when its context ended")
	}
	close(exp.hang)
	if !strings.Contains(logs.String(), "otel_queue_full") {
		t.Errorf("a full queue is logged:\n%s", logs)
	}
}

func TestBatcherExportsFullBatchesAtOnceAndTheRestOnSchedule(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
	exp := &flakyExporter{}
	b := newBatcher(exp, func(int) {})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	tr := tp.Tracer("t")
	for range 9 {
		_, sp := tr.Start(context.Background(), "x")
		sp.End()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		exp.mu.Lock()
		n := len(exp.batches)
		exp.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	exp.mu.Lock()
	sizes := []int{}
	for _, bt := range exp.batches {
		sizes = append(sizes, len(bt))
	}
	exp.mu.Unlock()
	if len(sizes) != 2 || sizes[0] != 4 || sizes[1] != 4 {
		t.Fatalf("full batches go at once, the rest waits: %v", sizes)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(exp.batches) != 3 || len(exp.batches[2]) != 1 {
		t.Fatalf("shutdown flushes the rest: %d batches", len(exp.batches))
	}
}
