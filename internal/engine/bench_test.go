package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/trace"
)

// BenchmarkCall measures the whole pipeline (policy stat, validation,
// injection, timeout, classify, audit) on a cheap read-only tool over a real
// sandbox in a temp dir, without an audit sink and with the real file sink.
//
// traced is no_audit with a session that records spans and metrics with the
// OpenTelemetry SDK (both discarded): what tracing adds to a call's own
// path, without the export.
func BenchmarkCall(b *testing.B) {
	for _, sinkName := range []string{"no_audit", "file_audit", "traced"} {
		b.Run(sinkName, func(b *testing.B) {
			var ts *trace.Session
			if sinkName == "traced" {
				var flush func()
				ts, flush = tracedSession(b, tracetest.NewNoopExporter())
				b.Cleanup(flush)
			}
			r := newRig(b, rigOpts{
				tools:  []tool.Tool{scripted("echo", tool.ReadOnly, &script{})},
				policy: map[string]policy.Rule{"echo": {Permission: policy.Read, TimeoutMS: 1000, MaxRetries: 2}},
				trace:  ts,
			})
			r.eng.Audit = nil
			if sinkName == "file_audit" {
				sink := audit.NewFileSink(r.eng.Services.Shared.(audit.Door), audit.Options{})
				b.Cleanup(func() { sink.Close() })
				r.eng.Audit = sink
			}
			req := engine.Request{Tool: "echo", Args: json.RawMessage(`{"text":"hello","data":{"n":1}}`)}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if out := r.eng.Call(ctx, req); out.IsError {
					b.Fatal(out.Message)
				}
			}
		})
	}
}
