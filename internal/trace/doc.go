// Package trace is toolhost's span API: spans and metrics named and
// attributed as the MCP semantic conventions say (docs/gen-ai/mcp.md of
// open-telemetry/semantic-conventions), opened and ended through the
// OpenTelemetry API only. Where they go — the SDK and the OTLP exporters,
// configured by the standard OTEL_* variables — is package trace/otlp,
// which only the CLI wires in (as gopls keeps internal/event apart from
// event/export/otel): the engine, the server and the transports import
// this package and link no SDK, exporter or gRPC.
//
// A nil *Provider (no OTEL_* variable asks for export) exports nothing: no
// SDK object exists, no goroutine is started, and every hook costs a nil
// check. A caller's trace context (_meta.traceparent) is still passed on to
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
// This package classifies nothing: how a call, a stage or an attempt ended
// is the engine's verdict (an audit.Status and a fault.Kind), which it
// records as given.
//
// This package must never put a tool's arguments or results on a span
// unless Options.Args is set (--trace-args), and then only the redacted
// form the caller hands it (the audit's redactor); never write to stdout
// (the protocol channel); and never set OpenTelemetry's process-global
// providers, propagators or error handler (two sessions in one process are
// independent).
package trace
