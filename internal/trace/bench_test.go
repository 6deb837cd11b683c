package trace_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/testutil/spantest"
	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/trace/otlp"
)

// BenchmarkToolCall is the trace work of one tools/call as the server and
// the engine do it (request span, call, validation stage, one attempt,
// outcome, the request's end and metrics), with the SDK recording and the
// exporters discarding: the cost a call pays on its own path.
func BenchmarkToolCall(b *testing.B) {
	for _, c := range []struct {
		name    string
		spans   bool
		metrics bool
	}{{"spans+metrics", true, true}, {"spans", true, false}, {"metrics", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			var e otlp.Exporters
			if c.spans {
				e.Spans = tracetest.NewNoopExporter()
			}
			if c.metrics {
				e.Metrics = spantest.DiscardMetrics{}
			}
			p, _ := otlp.New(e, trace.Options{Log: zerolog.Nop()})
			s := p.Session(trace.Identity{SessionID: "s", Agent: "integrator"})
			defer p.Shutdown(context.Background())
			base := trace.WithTransport(context.Background(), trace.Transport{Network: "pipe"})
			id := json.RawMessage("7")
			b.ReportAllocs()
			for b.Loop() {
				ctx, r := s.Request(base, "tools/call", id)
				ctx = trace.Begin(ctx, trace.Parent{}, "2025-06-18", "parse_placeholder")
				ctx, call := s.Call(ctx, "parse_placeholder", "01HZZZ", trace.Parent{})
				sctx := call.Stage(ctx, trace.Validate)
				ctx = call.Handover(sctx)
				call.EndStage(sctx, fault.None)
				_, a := call.Attempt(ctx, 1, "", "")
				a.End(fault.None, false)
				call.End(trace.Outcome{Status: audit.StatusOK, Permission: "read"})
				r.End(0, "")
			}
		})
	}
}
