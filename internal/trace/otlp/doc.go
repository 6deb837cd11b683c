// Package otlp is where toolhost's telemetry goes: the OpenTelemetry SDK's
// tracer and meter providers over OTLP exporters (HTTP or gRPC), configured
// only by the standard OTEL_* environment variables (FromEnv), behind the
// trace.Backend the span API (package trace) reaches them through. Only the
// CLI imports it.
//
// Export never blocks or fails a call: spans go through toolhost's own
// batching processor (a bounded buffer that drops when full, configured by
// the SDK's OTEL_BSP_* variables); after an exporter error the next export
// waits (1 s, doubling to 30 s) and the batches in between are dropped
// unsent; the error is logged once (and once more when the collector
// answers again), and Shutdown flushes what is queued within the deadline
// it is given.
//
// It must never open spans itself, and never set OpenTelemetry's
// process-global providers, propagators or error handler.
package otlp
