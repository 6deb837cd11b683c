// Package upstreamtest holds test fixtures for upstream MCP servers: the
// stdio fake (testdata/fakemcp, built once per test process), an in-process
// Streamable HTTP fake on loopback, and config files that wire them into
// toolhost. Only tests import it; it must never be used by the binary.
package upstreamtest
