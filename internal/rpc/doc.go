// Package rpc owns JSON-RPC 2.0 for every transport: Decode (the envelope
// rules: valid JSON, an object, "jsonrpc":"2.0" at the top level, an id that
// can be answered faithfully), and Conn, the state of one connection —
// concurrent dispatch on long-lived workers, a cancel map per request id
// (notifications/cancelled), server→client requests (elicitation) and
// notifications, mapping errors to JSON-RPC codes (ToWire), and a graceful
// drain whose late calls are cancelled with ErrShutdown as the cause. Serve
// frames stdio into a Conn (newline-delimited JSON, or LSP Content-Length
// headers) with a size cap per message that is exact, answering malformed
// input (-32700, -32600) without closing the session; the HTTP transport
// frames each POST into one.
//
// It is the project's own, not github.com/sourcegraph/jsonrpc2 (which the
// design card named), for correctness: a malformed line must not close the
// session, as jsonrpc2 does on any read error, and a request id must come
// back byte for byte (jsonrpc2 keeps ids as uint64, so a negative id came
// back as a huge positive one). It also decodes each message once,
// envelopes through internal/util/wirejson.
//
// It knows nothing of MCP methods or tools; it must never write anything to
// stdout but protocol messages.
package rpc
