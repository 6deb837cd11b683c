//go:build bench_no_grpc

package otlp

import (
	"context"
	"errors"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// errNoGRPC is what a build with -tags bench_no_grpc (BenchmarkStartCost's
// A/B builds only) says to OTEL_EXPORTER_OTLP_PROTOCOL=grpc.
var errNoGRPC = errors.New("built without the OTLP gRPC exporters (-tags bench_no_grpc)")

func grpcSpanExporter(context.Context) (sdktrace.SpanExporter, error) { return nil, errNoGRPC }

func grpcMetricExporter(context.Context) (sdkmetric.Exporter, error) { return nil, errNoGRPC }
