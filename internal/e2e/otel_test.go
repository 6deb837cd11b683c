package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/otelcol"
	"github.com/toolhost/toolhost/internal/upstream/upstreamtest"
)

// The caller's trace context the tests send in _meta, and the one they put
// in toolhost's environment.
const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
	envTrace     = "0af7651916cd43dd8448eb211c80319c"
	envSpan      = "b7ad6b7169203331"
	envParent    = "00-" + envTrace + "-" + envSpan + "-01"
)

// withoutTelemetry is environ without OTEL_* and TRACEPARENT/TRACESTATE, so
// a developer's own settings cannot change what a test sees.
func withoutTelemetry(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		return strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "TRACEPARENT=") || strings.HasPrefix(kv, "TRACESTATE=")
	})
}

// TestOTelSpans runs a session over stdio against a real collector, once per
// OTLP protocol, and reads back what it received: a span per request named
// and attributed as the MCP conventions say, parented on the caller's
// _meta.traceparent, with the stages below it, error spans for a refused
// and a failed call, and the trace continued into an upstream MCP server's
// call and a bash command's environment. The gRPC run also has TRACEPARENT
// in toolhost's environment (the parent of what names no parent) and
// --trace-args (redacted arguments on the spans); the HTTP run neither.
func TestOTelSpans(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(strings.ReplaceAll(proto, "/", "_"), func(t *testing.T) {
			t.Parallel()
			otelSession(t, proto, proto == "grpc")
		})
	}
}

func otelSession(t *testing.T, proto string, extras bool) {
	col := otelcol.Start(t)
	endpoint := col.HTTP
	if proto == "grpc" {
		endpoint = col.GRPC
	}
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	web := upstreamtest.StartHTTPFake(t, "127.0.0.1:0")
	agentsFile, policyFile := upstreamtest.WriteConfigsFor(t, dir, "integrator", map[string]policy.Rule{
		"fake__traceparent": {Permission: policy.Read}, "fake__fail": {Permission: policy.Write},
		"web__lookup": {Permission: policy.Read, MaxRetries: 2},
		"bug_list":    {Permission: policy.Read, Confirm: true},
	}, policy.Upstream{Name: "fake", Transport: "stdio", Command: upstreamtest.FakeMCP(t), DiscoveryTimeoutMS: 20000},
		policy.Upstream{Name: "web", Transport: "http", URL: web.URL, DiscoveryTimeoutMS: 20000})
	addRules(t, policyFile, rules.Rule{ID: "no-shouting", Tool: "parse_placeholder", When: "args.text == 'SHOUT'", Effect: rules.Deny, Reason: "no shouting"})
	env := append(withoutTelemetry(os.Environ()),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+proto,
		"OTEL_SERVICE_NAME=toolhost-e2e", "OTEL_BSP_SCHEDULE_DELAY=50")
	args := []string{"--agent", "integrator", "--project-dir", project, "--agents", agentsFile, "--policy", policyFile, "--grace", "5s"}
	if extras {
		env = append(env, "TRACEPARENT="+envParent)
		args = append(args, "--trace-args")
	}
	c := testutil.ServeEnv(t, env, args...)
	listed := testutil.ListTools(t, c)
	for _, name := range []string{"fake__traceparent", "web__lookup"} {
		if _, ok := listed[name]; !ok {
			t.Fatalf("%s not listed\n%s", name, c.Stderr())
		}
	}
	meta := func(callID string) map[string]any {
		return map[string]any{"call_id": callID, "traceparent": callerParent, "tracestate": "rojo=00f067aa0ba902b7"}
	}
	call := func(name string, args any, callID string) *stdioclient.ToolResult {
		return testutil.CallToolMeta(t, c, name, args, meta(callID))
	}

	if r := call("parse_placeholder", map[string]any{"text": "ping {{var:x}}", "vars": map[string]any{"x": 1, "api_key": "sk-live-7d1e"}}, "c-ok"); r.IsError {
		t.Fatalf("parse_placeholder: %s", r.Text())
	}
	if r := call("parse_placeholder", map[string]any{"text": 42}, "c-refused"); !r.IsError {
		t.Fatalf("a text that is a number must be refused: %s", r.Text())
	}
	if r := call("fake__fail", map[string]any{}, "c-failed"); !r.IsError {
		t.Fatalf("fake__fail: %s", r.Text())
	}
	up := call("fake__traceparent", map[string]any{}, "c-upstream")
	var got struct{ Traceparent string }
	testutil.DecodeResult(t, "fake__traceparent", up, &got)
	var sh bashResult
	testutil.DecodeResult(t, "bash", call("bash", map[string]any{"command": "echo $TRACEPARENT"}, "c-bash"), &sh)
	// The HTTP upstream answers the first attempt 503: the read tool is
	// retried.
	web.FailNext.Store(1)
	if r := call("web__lookup", map[string]any{"key": "k"}, "c-retried"); r.IsError {
		t.Fatalf("web__lookup must succeed on its second attempt: %s", r.Text())
	}
	webHeader, _ := web.Traceparent.Load().(string)
	if r := call("parse_placeholder", map[string]any{"text": "SHOUT"}, "c-rule"); !r.IsError {
		t.Fatalf("the rule no-shouting must refuse: %s", r.Text())
	}
	// A call that names no parent: the session's trace.
	if r := testutil.CallToolMeta(t, c, "parse_placeholder", map[string]any{"text": "plain"}, map[string]any{"call_id": "c-plain"}); r.IsError {
		t.Fatalf("parse_placeholder: %s", r.Text())
	}
	// A confirmation: asked (no elicitation here), approved, then run.
	asked := call("bug_list", map[string]any{}, "c-confirm-1")
	id := regexp.MustCompile(`toolhost approve (cf-[0-9A-Z]+)`).FindStringSubmatch(asked.Text())
	if id == nil {
		t.Fatalf("bug_list must wait for a confirmation: %s", asked.Text())
	}
	if out, err := exec.Command(testutil.Toolhost(t), "approve", id[1], "--project-dir", project).CombinedOutput(); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	if r := call("bug_list", map[string]any{}, "c-confirm-2"); r.IsError {
		t.Fatalf("bug_list after approval: %s", r.Text())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rpcErr *stdioclient.RPCError
	if _, err := c.CallTool(ctx, "no_such_tool", map[string]any{}, meta("c-unknown")); !asRPCError(err, &rpcErr) || rpcErr.Code != -32602 {
		t.Fatalf("an unknown tool is -32602, got %v", err)
	}
	// The spans still queued are flushed when the session ends.
	if err := c.Close(20 * time.Second); err != nil {
		t.Fatalf("close: %v\n%s", err, c.Stderr())
	}
	spans := col.WaitSpans(t, func(s []otelcol.Span) bool { return len(named(s, "toolhost session")) == 1 })
	all := otelcol.Names(spans)

	sess := named(spans, "toolhost session")[0]
	// The session is toolhost's resource: sent once per batch, not per span.
	if sess.Resource["service.name"] != "toolhost-e2e" || sess.Resource["toolhost.agent"] != "integrator" ||
		sess.Resource["service.instance.id"] != sess.Attrs["toolhost.session.id"] || sess.Attrs["toolhost.session.id"] == nil {
		t.Errorf("session span: resource %v attrs %v", sess.Resource, sess.Attrs)
	}
	if extras {
		if sess.TraceID != envTrace || sess.ParentSpanID != envSpan {
			t.Errorf("with TRACEPARENT in its environment the session span continues it: trace %s parent %s", sess.TraceID, sess.ParentSpanID)
		}
	} else if sess.ParentSpanID != "" {
		t.Errorf("without a parent the session span starts a trace: parent %s", sess.ParentSpanID)
	}
	init := only(t, named(spans, "initialize"), all)
	wantAttrs(t, init, map[string]any{"mcp.method.name": "initialize", "jsonrpc.request.id": "1", "mcp.protocol.version": "2025-06-18", "network.transport": "pipe"})
	if init.Kind != 2 || init.TraceID != sess.TraceID || init.ParentSpanID != sess.SpanID {
		t.Errorf("initialize names no parent: a SERVER span below the session's; kind %d trace %s parent %s", init.Kind, init.TraceID, init.ParentSpanID)
	}

	// One span per call, each the caller's child, linked to the session.
	calls := map[string]otelcol.Span{}
	for _, id := range []string{"c-ok", "c-refused", "c-failed", "c-upstream", "c-bash", "c-retried", "c-rule", "c-plain", "c-confirm-1", "c-confirm-2"} {
		var mine []otelcol.Span
		for _, s := range spans {
			if s.Attrs["gen_ai.tool.call.id"] == id {
				mine = append(mine, s)
			}
		}
		s := only(t, mine, all)
		calls[id] = s
		tool := s.Attrs["gen_ai.tool.name"]
		if s.Name != "tools/call "+tool.(string) || s.Kind != 2 {
			t.Errorf("%s: span %q kind %d; want \"tools/call %s\", SERVER", id, s.Name, s.Kind, tool)
		}
		wantAttrs(t, s, map[string]any{"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
			"mcp.protocol.version": "2025-06-18", "network.transport": "pipe"})
		if _, ok := s.Attrs["jsonrpc.request.id"]; !ok {
			t.Errorf("%s: no jsonrpc.request.id: %v", id, s.Attrs)
		}
		if id == "c-plain" {
			if s.TraceID != sess.TraceID || s.ParentSpanID != sess.SpanID {
				t.Errorf("a call without traceparent belongs to the session's trace: trace %s parent %s", s.TraceID, s.ParentSpanID)
			}
			continue
		}
		if s.TraceID != callerTrace || s.ParentSpanID != callerSpan {
			t.Errorf("%s: trace %s parent %s; want the caller's %s / %s", id, s.TraceID, s.ParentSpanID, callerTrace, callerSpan)
		}
		if len(s.Links) != 1 || s.Links[0].SpanID != sess.SpanID {
			t.Errorf("%s: links %v; want the session span %s", id, s.Links, sess.SpanID)
		}
	}
	children := func(parent otelcol.Span, name string) []otelcol.Span {
		var out []otelcol.Span
		for _, s := range spans {
			if s.ParentSpanID == parent.SpanID && s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}

	ok := calls["c-ok"]
	wantAttrs(t, ok, map[string]any{"toolhost.status": "ok", "toolhost.policy.permission": "read"})
	if _, bad := ok.Attrs["error.type"]; bad || ok.Status.Code == 2 {
		t.Errorf("a successful call has no error: %v %v", ok.Attrs, ok.Status)
	}
	only(t, children(ok, "validate"), all)
	if n := len(children(ok, "attempt")); n != 0 {
		t.Errorf("a call that ran once is its one attempt; it has %d attempt spans", n)
	}

	refused := calls["c-refused"]
	wantAttrs(t, refused, map[string]any{"error.type": "tool_error", "toolhost.status": "rejected", "toolhost.rejection.kind": "validation"})
	if refused.Status.Code != 2 {
		t.Errorf("a refused call's span has status ERROR: %v", refused.Status)
	}
	wantAttrs(t, only(t, children(refused, "validate"), all), map[string]any{"error.type": "validation"})
	if n := len(children(refused, "attempt")); n != 0 {
		t.Errorf("a refused call never runs: %d attempts", n)
	}

	// A call a policy rule refused names the rule.
	wantAttrs(t, calls["c-rule"], map[string]any{"error.type": "tool_error", "toolhost.status": "rejected",
		"toolhost.rejection.kind": "policy", "toolhost.rule.id": "no-shouting", "toolhost.rule.effect": "deny"})
	if _, ok := calls["c-ok"].Attrs["toolhost.rule.id"]; ok {
		t.Errorf("a call no rule decided names no rule: %v", calls["c-ok"].Attrs)
	}

	failed := calls["c-failed"]
	wantAttrs(t, failed, map[string]any{"error.type": "tool_error", "toolhost.status": "error", "toolhost.rejection.kind": "upstream", "toolhost.policy.permission": "write"})
	client := only(t, children(failed, "tools/call fail"), all)
	wantAttrs(t, client, map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.name": "fail", "error.type": "tool_error", "toolhost.upstream": "fake"})
	if client.Kind != 3 || client.Status.Code != 2 {
		t.Errorf("the upstream call is a CLIENT span with status ERROR: kind %d status %v", client.Kind, client.Status)
	}

	// The upstream server got the context of toolhost's client span.
	upClient := only(t, children(calls["c-upstream"], "tools/call traceparent"), all)
	if want := "00-" + callerTrace + "-" + upClient.SpanID + "-01"; got.Traceparent != want {
		t.Errorf("the upstream received traceparent %q; want %q (toolhost's client span)", got.Traceparent, want)
	}

	// The bash command's environment names its own span.
	spawn := only(t, children(calls["c-bash"], "spawn bash"), all)
	if want := "00-" + callerTrace + "-" + spawn.SpanID + "-01"; strings.TrimSpace(sh.Stdout) != want {
		t.Errorf("bash saw TRACEPARENT=%q; want %q (its spawn span)", sh.Stdout, want)
	}
	wantAttrs(t, spawn, map[string]any{"process.executable.name": "bash", "process.exit.code": int64(0)})
	if pid, _ := spawn.Attrs["process.pid"].(int64); pid <= 0 {
		t.Errorf("spawn bash: no process.pid: %v", spawn.Attrs)
	}
	if _, ok := calls["c-bash"].Attrs["toolhost.sandbox"]; !ok {
		t.Errorf("the bash call names its confinement: %v", calls["c-bash"].Attrs)
	}

	// A retried call: a span per attempt, the first with its error; the
	// first attempt's upstream call hangs below the call (it was the call
	// until the retry), the second's below its attempt, and its HTTP
	// request carried that span's context.
	retried := calls["c-retried"]
	wantAttrs(t, retried, map[string]any{"toolhost.status": "ok", "toolhost.retries": int64(1)})
	var first, second otelcol.Span
	for _, a := range children(retried, "attempt") {
		switch a.Attrs["toolhost.attempt"] {
		case int64(1):
			first = a
		case int64(2):
			second = a
		}
	}
	if first.SpanID == "" || second.SpanID == "" || len(children(retried, "attempt")) != 2 {
		t.Fatalf("a call retried once has attempt spans 1 and 2:\n%s", all)
	}
	if first.Status.Code != 2 || second.Status.Code == 2 {
		t.Errorf("attempt 1 failed (status ERROR), attempt 2 did not: %v / %v", first.Status, second.Status)
	}
	wantAttrs(t, only(t, children(retried, "tools/call lookup"), all), map[string]any{"toolhost.upstream": "web"})
	webClient := only(t, children(second, "tools/call lookup"), all)
	if want := "00-" + callerTrace + "-" + webClient.SpanID + "-01"; webHeader != want {
		t.Errorf("the HTTP upstream got the traceparent header %q; want %q (the second attempt's client span)", webHeader, want)
	}

	// The confirmation: a span of its own each time; the first call ended
	// there, the second went through.
	wantAttrs(t, calls["c-confirm-1"], map[string]any{"toolhost.status": "rejected", "toolhost.rejection.kind": "needs_confirmation", "toolhost.policy.confirm": true})
	only(t, children(calls["c-confirm-1"], "confirm"), all)
	wantAttrs(t, only(t, children(calls["c-confirm-2"], "confirm"), all), map[string]any{"toolhost.confirmation": "confirmed"})
	wantAttrs(t, calls["c-confirm-2"], map[string]any{"toolhost.status": "ok"})

	unknown := only(t, named(spans, "tools/call no_such_tool"), all)
	wantAttrs(t, unknown, map[string]any{"error.type": "-32602", "rpc.response.status_code": "-32602"})
	if unknown.Status.Code != 2 || unknown.Status.Message == "" {
		t.Errorf("a JSON-RPC error's span has status ERROR with its message: %v", unknown.Status)
	}

	// Arguments only with --trace-args, and then redacted as in the audit.
	argSpans := 0
	for _, s := range spans {
		if a, ok := s.Attrs["gen_ai.tool.call.arguments"]; ok {
			argSpans++
			if strings.Contains(a.(string), "sk-live-7d1e") {
				t.Errorf("%s carries the secret: %s", s.Name, a)
			}
		}
	}
	if a, _ := ok.Attrs["gen_ai.tool.call.arguments"].(string); extras != strings.Contains(a, `"api_key":"[REDACTED]"`) {
		t.Errorf("--trace-args %v: arguments on the span %q", extras, a)
	}
	if !extras && argSpans > 0 {
		t.Errorf("without --trace-args no span carries arguments; %d do", argSpans)
	}

	otelMetrics(t, col)
}

// otelMetrics checks the metrics the session exported at its end.
func otelMetrics(t *testing.T, col *otelcol.Collector) {
	last := map[string]otelcol.Metric{}
	deadline := time.Now().Add(time.Minute)
	for _, ok := last["toolhost.confirmations"]; !ok; _, ok = last["toolhost.confirmations"] {
		for _, m := range col.Metrics(t) {
			last[m.Name] = m
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics received: %v\n%s", last, col.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	value := func(name string, attrs map[string]any) float64 {
		m, ok := last[name]
		if !ok {
			t.Errorf("no metric %s", name)
			return 0
		}
	points:
		for _, p := range m.Points {
			for k, v := range attrs {
				if p.Attrs[k] != v {
					continue points
				}
			}
			return p.Value
		}
		return 0
	}
	if n := value("mcp.server.operation.duration", map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.name": "parse_placeholder", "error.type": "tool_error"}); n != 2 {
		t.Errorf("mcp.server.operation.duration of refused parse_placeholder calls (invalid, and a rule's deny): count %v, want 2", n)
	}
	if last["mcp.server.operation.duration"].Unit != "s" {
		t.Errorf("mcp.server.operation.duration is in seconds: %q", last["mcp.server.operation.duration"].Unit)
	}
	if n := value("toolhost.tool.calls", map[string]any{"gen_ai.tool.name": "_OTHER", "toolhost.status": "rejected"}); n != 1 {
		t.Errorf("toolhost.tool.calls of an unknown tool are _OTHER: %v, want 1", n)
	}
	if n := value("toolhost.tool.calls", map[string]any{"gen_ai.tool.name": "parse_placeholder", "toolhost.status": "ok"}); n != 2 {
		t.Errorf("toolhost.tool.calls parse_placeholder ok = %v, want 2", n)
	}
	if n := value("toolhost.tool.rejections", map[string]any{"toolhost.rejection.kind": "validation"}); n != 1 {
		t.Errorf("toolhost.tool.rejections validation = %v, want 1", n)
	}
	if n := value("toolhost.tool.rejections", map[string]any{"toolhost.rejection.kind": "policy"}); n != 1 {
		t.Errorf("toolhost.tool.rejections policy = %v, want 1", n)
	}
	if n := value("toolhost.confirmations", map[string]any{"toolhost.confirmation": "needs_confirmation"}); n != 1 {
		t.Errorf("toolhost.confirmations needs_confirmation = %v, want 1", n)
	}
	if n := value("toolhost.confirmations", map[string]any{"toolhost.confirmation": "confirmed"}); n != 1 {
		t.Errorf("toolhost.confirmations confirmed = %v, want 1", n)
	}
}

// addRules appends rs to the rules of the policy file at path.
func addRules(t *testing.T, path string, rs ...rules.Rule) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := policy.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	f.Rules = append(f.Rules, rs...)
	if b, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func asRPCError(err error, target **stdioclient.RPCError) bool {
	e, ok := err.(*stdioclient.RPCError)
	*target = e
	return ok
}

func named(spans []otelcol.Span, name string) []otelcol.Span {
	var out []otelcol.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// only is the one span of spans, failing the test when there is not
// exactly one.
func only(t *testing.T, spans []otelcol.Span, all string) otelcol.Span {
	t.Helper()
	if len(spans) != 1 {
		names := make([]string, len(spans))
		for i, s := range spans {
			names[i] = s.Name
		}
		t.Fatalf("want exactly one span, got %d %v; all spans:\n%s", len(spans), names, all)
	}
	return spans[0]
}

func wantAttrs(t *testing.T, s otelcol.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Attrs[k]; !ok || got != v {
			b, _ := json.Marshal(s.Attrs)
			t.Errorf("span %q: %s = %v (%T), want %v (%T); attrs %s", s.Name, k, got, got, v, v, b)
		}
	}
}

// TestOTelCollectorDownOrHung: a collector that refuses connections or
// accepts them and never answers changes nothing a client sees — every call
// answers, the failure is logged once — and toolhost still exits at the
// end of its grace period. (What they cost in calls/s and memory is
// BenchmarkStdioTracing's.)
func TestOTelCollectorDownOrHung(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, proto string
		addr        func(testing.TB) string
	}{
		{"down_http", "http/protobuf", deadAddr},
		{"down_grpc", "grpc", deadAddr},
		{"hung_http", "http/protobuf", hangingAddr},
		{"hung_grpc", "grpc", hangingAddr},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := append(withoutTelemetry(os.Environ()), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+c.addr(t),
				"OTEL_EXPORTER_OTLP_PROTOCOL="+c.proto, "OTEL_BSP_SCHEDULE_DELAY=20", "OTEL_EXPORTER_OTLP_TIMEOUT=500")
			cl := testutil.ServeEnv(t, env, "--agent", "integrator", "--project-dir", t.TempDir(), "--grace", "2s")
			for i := range 300 {
				r := testutil.CallToolMeta(t, cl, "parse_placeholder", map[string]any{"text": "ping {{var:x}}", "vars": map[string]any{"x": i}},
					map[string]any{"traceparent": callerParent})
				if r.IsError {
					t.Fatalf("call %d: %s", i, r.Text())
				}
				if i == 150 {
					time.Sleep(time.Second) // several exports fail or time out meanwhile
				}
			}
			start := time.Now()
			if err := cl.Close(20 * time.Second); err != nil {
				t.Fatalf("toolhost did not exit: %v\n%s", err, cl.Stderr())
			}
			took := time.Since(start)
			logs := cl.Stderr()
			if strings.HasPrefix(c.name, "down") {
				for _, signal := range []string{"traces", "metrics"} {
					if n := strings.Count(logs, `"otel_export_failed","signal":"`+signal+`"`); n != 1 {
						t.Errorf("a dead collector is logged once per signal, not per batch: %s %d times\n%s", signal, n, logs)
					}
				}
			}
			if strings.Contains(logs, `"level":"error"`) {
				t.Errorf("no error is logged for telemetry:\n%s", logs)
			}
			t.Logf("exit took %v", took)
		})
	}
}

// TestOTelHTTPTransport: over Streamable HTTP a request's span says tcp and
// http, and a 2025 session's carries its Mcp-Session-Id; a stateless
// 2026-07-28 request has none. (Not parallel: the server inherits the
// OTEL_* variables set here.)
func TestOTelHTTPTransport(t *testing.T) {
	col := otelcol.Start(t)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") || k == "TRACEPARENT" {
			t.Setenv(k, "")
		}
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.HTTP)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	srv := testutil.ServeHTTP(t, testutil.Toolhost(t), "--agent", "integrator", "--project-dir", t.TempDir())
	post := func(body, session string, header map[string]string) (string, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		srv.Authorize(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	session, _ := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`, "", nil)
	if session == "" {
		t.Fatalf("no Mcp-Session-Id\n%s", srv.Log())
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
	if _, b := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"parse_placeholder","arguments":{"text":"a"},"_meta":{"call_id":"h-2025"}}}`,
		session, map[string]string{"MCP-Protocol-Version": "2025-06-18"}); !strings.Contains(b, `"isError":false`) {
		t.Fatalf("2025 call: %s", b)
	}
	if _, b := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"parse_placeholder","arguments":{"text":"a"},"_meta":{"call_id":"h-2026",`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "",
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "parse_placeholder"}); !strings.Contains(b, `"isError":false`) {
		t.Fatalf("2026 call: %s", b)
	}
	if err := srv.Stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, srv.Log())
	}
	spans := col.WaitSpans(t, func(s []otelcol.Span) bool { return len(named(s, "toolhost session")) == 1 })
	for _, s := range named(spans, "tools/call parse_placeholder") {
		want := map[string]any{"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1"}
		switch s.Attrs["gen_ai.tool.call.id"] {
		case "h-2025":
			want["mcp.session.id"], want["mcp.protocol.version"] = session, "2025-06-18"
		case "h-2026":
			want["mcp.protocol.version"] = "2026-07-28"
			if _, ok := s.Attrs["mcp.session.id"]; ok {
				t.Errorf("a stateless request has no MCP session: %v", s.Attrs)
			}
		}
		wantAttrs(t, s, want)
	}
	if n := len(named(spans, "tools/call parse_placeholder")); n != 2 {
		t.Errorf("two calls, %d spans", n)
	}
}
