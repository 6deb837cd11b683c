// Package e2e holds the end-to-end tests that drive the real toolhost binary
// over pipes: JSON-RPC transcripts (testdata/transcripts/*.txtar), the
// official MCP Go SDK as a client, several processes sharing one project,
// crashes mid-write, and bad input. It has no non-test code.
package e2e
