// Package upstream brings the tools of other MCP servers (the "upstream"
// entries of the tool policy) behind toolhost's gate.
//
// A Manager discovers every upstream in parallel, each bounded by its own
// discovery timeout, retries a failed one with backoff, and publishes each
// server's tools into the registry as one source ("mcp:<server>") named
// "<server>__<tool>". The tools it publishes are plain tool.Tool values, so
// every call goes through the same engine pipeline as a built-in: agent
// toolPolicy, policy permission (an unlisted upstream tool is denied),
// validation against the upstream's own input schema, timeout, audit.
//
// The processes of stdio upstreams are started through the session's process
// owner (procs): each runs in its own process group with its stderr in the
// log and dies with toolhost; closing a session closes its stdin, and a
// server that does not exit within the grace is stopped with its group. A
// process that died is started again on the next call.
//
// This package must never decide permissions or trust an upstream's
// annotations for them (the effect of a tool comes from the policy), never
// hand-write MCP framing (the go-sdk does that), and never send a loopback
// request through a proxy from the environment.
package upstream
