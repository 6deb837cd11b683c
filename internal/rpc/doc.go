// Package rpc owns the wire: JSON-RPC 2.0 framing (newline-delimited JSON,
// or LSP Content-Length headers), a size cap per message, answering
// malformed input (-32700, -32600) without closing the session, concurrent
// dispatch on long-lived workers with a cancel map per request id
// (notifications/cancelled), server→client requests (elicitation) and
// notifications, mapping errors to JSON-RPC codes, and a graceful drain on
// EOF or shutdown.
//
// It replaced github.com/sourcegraph/jsonrpc2, which the design card named:
// jsonrpc2 decodes every request into a map and encodes its params again,
// compacts each response four times, closes the connection on any read
// error and keeps ids as uint64 (a negative id came back as a huge positive
// one). Measured with the same pipeline on the same machine, a tools/call
// round trip went from ~150 to ~120 µs and 8-in-flight throughput from
// ~14.7k to ~17.5k calls/s (see the closing note of issue 2). Envelopes
// are decoded by internal/wirejson, several times faster than
// encoding/json and with its results.
//
// It knows nothing of MCP methods or tools; it must never write anything to
// stdout but protocol messages.
package rpc
