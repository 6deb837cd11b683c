// Package server is the one MCP method surface: every method of every
// protocol revision served (2026-07-28 per request; 2025-11-25, 2025-06-18
// and 2025-03-26 after initialize) — server/discover, initialize, tools/list
// with cursor pagination and cache hints, tools/call, subscriptions/listen,
// ping, logging/setLevel, empty resources/prompts lists — for both
// transports, which only frame messages into it.
//
// The methods are one table (methods.go: name, revisions served, handler)
// that Handle dispatches on and the HTTP transport reads; an error says
// what kind of refusal it is (rpc.Kind) and the transport picks its HTTP
// status from that.
//
// It reads the revision and capabilities a request speaks, checks the
// protocol fields toolhost relies on (_meta call_id, unit_id) at the
// boundary, and translates between MCP shapes and the engine's Request and
// Outcome (an InputRequiredResult included). It must never decide whether a
// call may run or how a confirmation is decided (the engine does), nor
// touch the wire framing (rpc and httpserve do).
package server
