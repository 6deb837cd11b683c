// Package rpc owns the wire: JSON-RPC 2.0 framing (newline-delimited JSON,
// or LSP Content-Length headers), a size cap per message, answering
// malformed input (-32700, -32600) without closing the session, concurrent
// dispatch on long-lived workers with a cancel map per request id
// (notifications/cancelled), server→client requests (elicitation) and
// notifications, mapping errors to JSON-RPC codes, and a graceful drain on
// EOF or shutdown.
//
// It is the project's own, not a library, because a malformed line must not
// close the session and a request id must come back byte for byte (any
// JSON number or string); it also decodes each message once, envelopes
// through internal/wirejson, instead of into a map and again for the
// params.
//
// It knows nothing of MCP methods or tools; it must never write anything to
// stdout but protocol messages.
package rpc
