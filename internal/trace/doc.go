// Package trace is toolhost's OpenTelemetry: spans and metrics named and
// attributed as the MCP semantic conventions say (docs/gen-ai/mcp.md of
// open-telemetry/semantic-conventions), exported over OTLP (HTTP or gRPC)
// with the OpenTelemetry Go SDK, configured only by the standard OTEL_*
// environment variables.
//
// FromEnv returns nil when no OTEL_* variable asks for export: then no SDK
// object exists, no goroutine is started, and every hook costs a nil check.
// A caller's trace context (_meta.traceparent) is still passed on to
// upstream MCP servers and to the commands toolhost starts, so a trace that
// goes through toolhost is not cut where toolhost does not export.
//
// The server opens the span of each MCP request (Session.Request, at the
// one MCP surface); the engine opens everything below it — the tool call's
// own attributes, its stages (validation, confirmation), each attempt, an
// upstream call and every command a tool spawns (Procs) — through this
// package, and no other package opens spans. Upstream clients only inject
// the current context (Context) into _meta and HTTP headers.
//
// Export never blocks or fails a call: spans go through toolhost's own
// batching processor (a bounded buffer that drops when full, configured by
// the SDK's OTEL_BSP_* variables); after an exporter error the next export
// waits (1 s, doubling to 30 s) and the batches in between are dropped
// unsent; the error is logged once (and once more when the collector
// answers again), and Shutdown flushes what is queued within the deadline
// it is given.
//
// This package must never put a tool's arguments or results on a span
// unless Options.Args is set (--trace-args), and then only the redacted
// form the caller hands it (the audit's redactor); never write to stdout
// (the protocol channel); and never set OpenTelemetry's process-global
// providers, propagators or error handler (two sessions in one process are
// independent).
package trace
