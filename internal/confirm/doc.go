// Package confirm keeps the human confirmations of calls to tools whose
// policy says `confirm: true`, for clients that cannot ask a human through
// MCP elicitation: such a call is refused with a confirmation id until a
// human approves it outside the conversation, so the model can never
// approve its own call.
//
// A call that needs confirmation leaves a pending entry in
// .toolhost/confirmations.json; `toolhost approve ID` (or --deny) records a
// human's decision; the next identical call (same agent, session, tool and
// canonical arguments) consumes it exactly once. A session id belongs to
// the one agent that first used it in the project: another agent presenting
// it is refused, so no agent can take a decision made for another. Every
// read-modify-write holds the file's cross-process lock, so two processes
// can never consume the same approval. This package never runs a tool and never writes outside
// the services' door it is given.
package confirm
