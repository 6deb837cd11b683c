//go:build !bench_no_grpc

package otlp

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP exporters sit in this file alone so that BenchmarkStartCost can
// build toolhost without gRPC (-tags bench_no_grpc) and weigh what linking
// it costs a serve. Leaving out the gRPC exporters alone would not do: the
// official OTLP/HTTP exporters link grpc too, through the collector
// packages of go.opentelemetry.io/proto/otlp that hold their request
// messages beside the gRPC service stubs.

func spanExporter(ctx context.Context, proto string) (sdktrace.SpanExporter, error) {
	if proto == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

func metricExporter(ctx context.Context, proto string) (sdkmetric.Exporter, error) {
	if proto == "grpc" {
		return otlpmetricgrpc.New(ctx)
	}
	return otlpmetrichttp.New(ctx)
}
