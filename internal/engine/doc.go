// Package engine is the one execution pipeline every tool call goes through,
// whatever the transport or the tool: lookup → agent toolPolicy → policy permission → schema
// validation → confirmation → ctx injection → guard → execute with timeout,
// cancellation and retry → panic recovery → classify → audit.
//
// The stages are middleware composed in one place (Engine.Init), so the
// order of the checks is decided here and nowhere else; no tool repeats a
// permission, validation or sandbox check. Classify is the one place that
// turns an error into an outcome (status, kind, message) that the server maps
// to the wire.
//
// Validation is JSON Schema 2020-12 — the dialect MCP 2025-11-25 made the
// default for tool schemas — or the earlier draft a schema's $schema names
// (internal/schema, santhosh-tekuri/jsonschema v6, checked against the
// official test suite). gojsonschema, the design card's choice, stopped at
// draft-07 and silently ignored newer keywords in upstream tools' schemas.
//
// A call's tool runs on a worker goroutine under its deadline; when the
// attempt ends in a way no retry follows, the worker also classifies and
// audits it, so the caller's goroutine wakes once per call. The caller
// still answers at the deadline if the tool ignores its context, and a
// stalled audit sink still costs at most AuditTimeout and a bounded number
// of goroutines.
package engine
