// Package engine is the one execution pipeline every tool call goes through
// (SPEC §4): lookup → agent toolPolicy → policy permission → schema
// validation → confirmation → ctx injection → guard → execute with timeout,
// cancellation and retry → panic recovery → classify → audit.
//
// The stages are middleware composed in one place (Engine.Init), so the
// order of the checks is decided here and nowhere else; no tool repeats a
// permission, validation or sandbox check. Classify is the one place that
// turns an error into an outcome (status, kind, message) that the server maps
// to the wire.
package engine
