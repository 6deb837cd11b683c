// Package dashboard is `toolhost dashboard`: one page, served over HTTP
// with its assets embedded (no CDN, no build step), that shows a project's
// six agents, their timeline, the bug board, the audit stream with per-tool
// durations, the pending confirmations and the project's documents, live
// through Server-Sent Events.
//
// The state comes from the project's stores, read the way their owners
// read them: the audit trail, the events and the timeline from their end
// and then followed across rotations (audit.Backward/Follow,
// journal.BackwardEvents/FollowEvents, …), so a dashboard started late
// shows the current state at once whatever the size of the logs; the bug
// index without repairing it (bugs.ReadIndex); todolists and runtime
// states; confirmations (confirm.Store). Whether a `toolhost serve` runs
// for an agent is taken from its session.start/session.end events and
// checked against the process (pid and start time), so a killed server
// shows as gone. Everything shown that could carry a secret passes the one
// redactor.
//
// It must never write anything but a human's decision on a pending
// confirmation, and that only through confirm.Store.Decide — the code path
// of `toolhost approve` — on a door whose allow-list is the confirmation
// store alone. It serves loopback only unless given a token, checks Host
// and Origin on every request (internal/webguard, shared with the MCP HTTP
// transport), takes decisions only as POSTs that carry the page's token,
// and serves no file outside the project (the sandbox's read rules: no
// symlink out) nor any dot-file.
package dashboard
