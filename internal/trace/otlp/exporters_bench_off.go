//go:build bench_no_grpc

package otlp

import (
	"context"
	"errors"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	// The OTLP messages stay linked, as an exporter without gRPC would
	// need them: the build weighs gRPC alone.
	_ "go.opentelemetry.io/proto/otlp/metrics/v1"
	_ "go.opentelemetry.io/proto/otlp/trace/v1"
)

// errNoGRPC is what a build with -tags bench_no_grpc (BenchmarkStartCost's
// A/B builds only) says when OTEL_* variables ask for export.
var errNoGRPC = errors.New("built without gRPC and so without the OTLP exporters (-tags bench_no_grpc)")

func spanExporter(context.Context, string) (sdktrace.SpanExporter, error) { return nil, errNoGRPC }

func metricExporter(context.Context, string) (sdkmetric.Exporter, error) { return nil, errNoGRPC }
