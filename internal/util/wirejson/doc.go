// Package wirejson decodes the JSON that every call carries — the JSON-RPC
// envelope, the tools/call params, the arguments validated against a tool's
// schema — and checks the lines audit verify walks, faster than
// encoding/json, with encoding/json's results.
//
// It parses with github.com/segmentio/encoding/json (already in the module
// graph through the MCP SDK), which decodes these shapes in a fraction of
// encoding/json's time and allocations (docs/benchmarks.md).
// Where the two could disagree it does not use it: input that is not valid
// UTF-8 (encoding/json replaces the bad bytes, segmentio keeps them), input
// nested deeper than 64 levels (segmentio recurses without a limit), and
// any input segmentio rejects, which is decoded again by encoding/json so
// that callers see the standard library's error values and words. A fuzz
// test holds the two to the same results.
//
// Encoding stays with encoding/json: there the difference is small and the
// hot encoders (audit rows, results) are written by hand.
package wirejson
