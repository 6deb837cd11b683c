// Package session wires one agent session from its launch options: agent
// template, policy, project sandbox, services (timeline, events, audit),
// engine and MCP server, and the upstream MCP servers of the policy (started
// at Open, re-applied when the policy file changes, stopped by Close).
// serve, call, phase0-verify and demo all start sessions through Open, so
// the wiring exists once.
//
// It must never hold package-level state: two sessions in one process (as in
// tests) are independent.
package session
