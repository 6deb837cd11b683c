// Package rpc is the only importer of github.com/sourcegraph/jsonrpc2. It
// owns the wire: framing (newline-delimited JSON, or LSP Content-Length
// headers), a size cap per message, answering malformed input (-32700,
// -32600) without closing the session, concurrent dispatch with a cancel
// map per request id (notifications/cancelled), mapping errors to JSON-RPC
// codes, and a graceful drain on EOF or shutdown.
//
// It knows nothing of MCP methods or tools; it must never write anything to
// stdout but protocol messages.
package rpc
