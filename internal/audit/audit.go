package audit

import (
	"encoding/json"
	"time"
)

// Path is the default sink, relative to the project dir.
const Path = ".toolhost/audit.ndjson"

// Status is how a call ended, as its row says (the row's "status"); the
// constants below are every status there is (an on-disk format: never
// rename one). With the call's fault.Kind it is what the engine's one
// classification of a call gives, and what its trace span and metrics
// record.
type Status string

// Statuses a row may carry.
const (
	StatusOK        Status = "ok"
	StatusOKFalse   Status = "ok_false"
	StatusRejected  Status = "rejected"
	StatusTimeout   Status = "timeout"
	StatusCancelled Status = "cancelled"
	StatusError     Status = "error"
	// StatusSuperseded marks a pending confirmation that a different call of
	// the same tool in the same session replaced; it is not a call of its
	// own, so it carries the call_id of the call that asked for it.
	StatusSuperseded Status = "superseded"
	// StatusAsked marks a hook decision that handed the call to the agent
	// CLI's own user (a confirm rule): the CLI asks, toolhost did not run it.
	StatusAsked Status = "asked"
	// StatusPin marks a row about an upstream tool's pinned definition
	// (pinned, withheld, approved): not a call; Pin says what happened.
	StatusPin Status = "pin"
)

// Row is one audited call.
type Row struct {
	TS        time.Time       `json:"ts"`
	CallID    string          `json:"call_id"`
	SessionID string          `json:"session_id,omitempty"`
	ProjectID string          `json:"pid,omitempty"`
	Agent     string          `json:"agent"`
	UnitID    string          `json:"unit_id,omitempty"`
	Tool      string          `json:"tool"`
	Source    string          `json:"source,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Status    Status          `json:"status"`
	ErrorKind string          `json:"error_kind,omitempty"`
	// Rule is the id of the policy rule that decided the call (a deny,
	// confirm or allow of internal/rules); empty when none matched.
	Rule       string  `json:"rule,omitempty"`
	Error      string  `json:"error,omitempty"`
	ErrorID    string  `json:"error_id,omitempty"`
	RetryCount int     `json:"retry_count"`
	DurationMS float64 `json:"duration_ms"`
	// Sandbox is how the call's commands were confined ("landlock abi 7;
	// write …" or "unconfined: reason"); empty when it started none.
	Sandbox string `json:"sandbox,omitempty"`
	// Traceparent is the W3C trace context the client sent with the call.
	Traceparent string `json:"traceparent,omitempty"`
	// ClientSessionID, ClientAgentID and ToolUseID are what the agent CLI
	// said about the call (Claude Code: its session_id, the subagent's
	// agent_id, the model's tool_use id), so the rows of one CLI session's
	// agents, and a hook's row and the call it let through, can be put
	// together; empty where the CLI sends nothing.
	ClientSessionID string `json:"client_session_id,omitempty"`
	ClientAgentID   string `json:"client_agent_id,omitempty"`
	ToolUseID       string `json:"tool_use_id,omitempty"`
	// Pin is set on the rows of status pin.
	Pin *PinNote `json:"pin,omitempty"`
	// Seq and Prev chain the row to the trail (set by FileSink as it
	// writes): its number in the chain and the sha256 (hex) of the line
	// before it. See Verify.
	Seq  int64  `json:"seq,omitempty"`
	Prev string `json:"prev,omitempty"`
}

// PinNote is what happened to an upstream tool's pinned definition.
type PinNote struct {
	// Action is PinPinned, PinWithheld or PinApproved.
	Action string `json:"action"`
	// Hash is the definition the row is about ("sha256:…").
	Hash string `json:"hash"`
	// Pinned is the definition pinned before (withheld, approved); empty
	// for a tool that had none.
	Pinned string `json:"pinned,omitempty"`
	// Change names what differs from the pinned definition
	// ("description, inputSchema"), or "new tool".
	Change string `json:"change,omitempty"`
}

// Pin actions.
const (
	PinPinned   = "pinned"
	PinWithheld = "withheld"
	PinApproved = "approved"
)

// Sink stores rows.
type Sink interface {
	Write(r *Row) error
}
