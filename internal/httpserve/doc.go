// Package httpserve serves one toolhost session over MCP Streamable HTTP
// (toolhost serve --http ADDR), for clients that cannot spawn a process.
//
// The MCP side (framing, sessions, SSE) is the go-sdk's server; the tools it
// offers are the session's visible tools with their schemas as they are,
// and every handler calls engine.Call, so policy, validation, the sandbox,
// the guard, timeouts and audit are exactly those of the stdio transport.
//
// It must never run a tool by any other path than the engine, and never
// accept a request without the bearer token when one is configured.
package httpserve
