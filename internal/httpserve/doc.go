// Package httpserve is toolhost's Streamable HTTP transport (toolhost serve
// --http ADDR), for clients that cannot spawn a process: it frames HTTP
// POST, GET and DELETE into the same method surface (internal/server) and
// JSON-RPC connections (internal/rpc) that stdio uses, so every method,
// result and error — confirmation included — is the same on both.
//
// 2026-07-28 requests are stateless POSTs whose headers are checked against
// their bodies; 2025 clients get sessions (Mcp-Session-Id) with a GET
// stream and server→client requests on a call's SSE response. It owns
// what is HTTP's alone: the Origin and Host checks against DNS rebinding,
// the bearer token, body deadlines and size caps, status codes, SSE.
//
// It must never run a tool or answer a method itself (the server does),
// and never serve a request that fails the Origin, Host or token check.
package httpserve
