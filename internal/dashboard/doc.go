// Package dashboard is `toolhost dashboard`: one page, served over HTTP
// with its assets embedded (no CDN, no build step), that shows a project's
// six agents, their timeline, the bug board, the audit stream with per-tool
// durations, the pending confirmations and the project's documents, live
// through Server-Sent Events.
//
// The state comes from the project's store (internal/store), whichever it
// is — the project dir's files or a database shared by several machines —
// through its interfaces only: the audit trail, the events and the
// timeline from their end and then followed (Backward, Follow), so a
// dashboard started late shows the current state at once whatever the
// size of the logs; the bug summaries, never repairing anything; the
// agents' todolists and runtime states and the confirmations, re-read when
// the store's Watch (or an event) says they changed. Whether a `toolhost
// serve` runs for an agent is taken from its session.start/session.end
// events and, for a server on this machine, checked against the process
// (pid and start time), so a killed server shows as gone. The documents
// and the triager's notes are the project dir's files, read through a door
// that writes nothing. Everything shown that could carry a secret passes
// the one redactor.
//
// It must never write anything but a human's decision on a pending
// confirmation, and that only through the store's Confirmations().Decide —
// the code path of `toolhost approve`; the file store it opens itself can
// write the confirmations alone (filestore.DecisionsOnly). It serves
// loopback only unless given a token, checks Host and Origin on every
// request (internal/webguard, shared with the MCP HTTP transport), takes
// decisions only as POSTs that carry the page's token, and serves no file
// outside the project (the sandbox's read rules: no symlink out) nor any
// dot-file.
package dashboard
