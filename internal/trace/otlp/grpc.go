//go:build !bench_no_grpc

package otlp

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The gRPC exporters (OTEL_EXPORTER_OTLP_PROTOCOL=grpc) sit in this file
// alone so that BenchmarkStartCost can build toolhost without them
// (-tags bench_no_grpc) and weigh what gRPC costs a serve.

func grpcSpanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	return otlptracegrpc.New(ctx)
}

func grpcMetricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	return otlpmetricgrpc.New(ctx)
}
