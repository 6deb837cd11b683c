package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/rs/zerolog"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolhost/toolhost/internal/trace"
)

// tracedSession is a real OpenTelemetry SDK session whose spans go to exp
// and whose metrics are discarded.
func tracedSession(t testing.TB, exp sdktrace.SpanExporter) (*trace.Session, func()) {
	t.Helper()
	p, err := trace.New(trace.Exporters{Spans: exp, Metrics: discardMetrics{}}, trace.Options{Log: zerolog.Nop()})
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

// discardMetrics is a metric exporter that drops everything (the
// benchmark measures recording, not export).
type discardMetrics struct{}

func (discardMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (discardMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (discardMetrics) Export(context.Context, *metricdata.ResourceMetrics) error { return nil }
func (discardMetrics) ForceFlush(context.Context) error                          { return nil }
func (discardMetrics) Shutdown(context.Context) error                            { return nil }

var _ = errors.New
var _ = json.Valid
