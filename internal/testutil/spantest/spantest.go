package spantest

import (
	"context"
	"os"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Kept is an in-memory exporter that keeps its spans when shut down (the
// SDK's forgets them), so a test reads them after the provider's Shutdown
// has flushed everything.
type Kept struct{ *tracetest.InMemoryExporter }

// NewKept returns an empty Kept.
func NewKept() Kept { return Kept{tracetest.NewInMemoryExporter()} }

// Shutdown keeps the spans.
func (Kept) Shutdown(context.Context) error { return nil }

// DiscardMetrics is a metric exporter that drops everything.
type DiscardMetrics struct{}

func (DiscardMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (DiscardMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (DiscardMetrics) Export(context.Context, *metricdata.ResourceMetrics) error { return nil }
func (DiscardMetrics) ForceFlush(context.Context) error                          { return nil }
func (DiscardMetrics) Shutdown(context.Context) error                            { return nil }

// Named returns the spans called name, in order.
func Named(spans []tracetest.SpanStub, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Attr returns the value of the span's attribute key, nil when it has none.
func Attr(s tracetest.SpanStub, key string) any {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.AsInterface()
		}
	}
	return nil
}

// ClearEnv unsets every OTEL_* variable and TRACEPARENT/TRACESTATE for the
// test (restored after it), so the machine's telemetry settings do not
// change what a test of tracing sees.
func ClearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || k == "TRACEPARENT" || k == "TRACESTATE" {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}
