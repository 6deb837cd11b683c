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
// Every discovered definition is checked against the project's pins
// (Pins, .toolhost/pins.json): the first discovery of a server pins its
// tools; a definition that differs later, or a new tool of a pinned server,
// is published withheld (tool.Spec.Withheld), so policy.File.Access hides
// it from every list and the engine refuses its calls, until `toolhost
// upstream approve` pins it. Pins, withholds and approvals are audit rows.
//
// The health of each upstream is counted from what its connection sees: a
// call timeout, a lost connection, a session that ended on its own, a failed
// ping of an idle stdio server are failures; any answer resets them. After
// max_failures in a row the server is killed with its process group and
// discovered again after a backoff, its tools withheld meanwhile.
//
// The processes of stdio upstreams are started through the session's process
// owner (procs): each runs in its own process group with its stderr in the
// log and dies with toolhost; closing a session closes their stdin, and a
// server that does not exit is stopped with its group, all within the
// session's shutdown deadline. conn.call is the one place a tools/call is
// sent to an upstream.
//
// This package must never decide permissions or trust an upstream's
// annotations for them (the effect of a tool comes from the policy), never
// let a withheld tool's call reach its server, never retry a call itself
// (the engine decides what is retried), never hand-write MCP framing (the
// go-sdk does that), and never send a loopback request through a proxy from
// the environment.
package upstream
