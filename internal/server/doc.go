// Package server implements the MCP server methods (initialize, ping,
// tools/list with cursor pagination, tools/call, logging/setLevel, empty
// resources/prompts lists) on top of the rpc package and the engine.
//
// It translates between MCP shapes and the engine's Request/Outcome; it must
// never decide whether a call may run (the engine does) nor touch the wire
// framing (rpc does).
package server
