// Package stdioclient is a small MCP client that drives a toolhost serve
// subprocess (started through procs, so it dies with its parent) over
// newline-delimited JSON-RPC on pipes. phase0-verify, the
// demo, the stdio benchmark and the protocol tests use it, so the protocol is
// always exercised through the real binary.
//
// It is deliberately minimal (no SDK in the hot path); interop with real
// clients is tested separately with the official SDKs.
package stdioclient
