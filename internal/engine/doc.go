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
// A call runs on its caller's goroutine, the tool included, so a call
// costs no hand-off between goroutines. Timers keep the protections: a tool
// that ignores its context past its deadline is answered as timed out
// through Request.Answer while it still holds that goroutine (internal/rpc
// writes such an early answer for stdio and 2025 HTTP sessions; a caller
// that cannot answer early gets the call run on a worker instead), and a
// stalled audit sink costs a call at most AuditTimeout and the process a
// bounded number of goroutines.
package engine
