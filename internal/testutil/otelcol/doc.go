// Package otelcol runs the real OpenTelemetry Collector (built by
// scripts/deps/80-otelcol.sh into .deps/otelcol/) on loopback for tests:
// its OTLP receiver on a gRPC and an HTTP port, and its file exporter
// writing what it received as OTLP JSON, which the tests read back as
// spans and metric points.
//
// It must never listen beyond loopback, and never be used outside tests.
package otelcol
