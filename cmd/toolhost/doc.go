// Command toolhost serves the devloop tools to agent CLIs over MCP
// (JSON-RPC 2.0 on stdio). main only hands over to internal/cli; it must
// never hold logic of its own.
package main
