package fault

import "fmt"

// Kind says why a call did not end in a result. The set is closed: the
// constants below are every kind there is, and their strings are the
// error_kind values of audit rows (an on-disk format: never rename one).
type Kind uint8

// The kinds. None is the zero value: the call produced a result.
const (
	None Kind = iota

	// Rejections: the call itself is not acceptable; its message, shown to
	// the model as is, says what to change.

	// Validation: the arguments do not match the schema or the tool's rules.
	Validation
	// Sandbox: a read or write the sandbox door refused.
	Sandbox
	// Guard: a shell command the Bash guard blocked.
	Guard
	// Policy: the agent's toolPolicy or the policy file does not permit it.
	Policy
	// UnknownTool: no tool of that name (a protocol error on the wire).
	UnknownTool
	// NeedsConfirmation: a human must approve it with `toolhost approve`.
	NeedsConfirmation
	// UserDeclined: the human declined the confirmation (an elicitation
	// cancelled without anyone deciding falls back to NeedsConfirmation).
	UserDeclined
	// UserDenied: the human denied it with `toolhost approve --deny`.
	UserDenied
	// ConfirmationFailed: asking the human failed.
	ConfirmationFailed
	// RequestStateInvalid: a 2026-07-28 retry whose requestState is
	// tampered, replayed, expired or bound to another call.
	RequestStateInvalid
	// InputRequired: a 2026-07-28 client was asked to confirm through an
	// InputRequiredResult; its retry is a call (and a row) of its own.
	InputRequired
	// Pin: an upstream tool whose definition differs from the one pinned
	// in the project (or a new tool of a pinned server), withheld until
	// `toolhost upstream approve`; also the kind of the pin rows that
	// record a withhold.
	Pin
	// Unavailable: an upstream tool whose server is being restarted after
	// it stopped answering; nothing ran, a later call may.
	Unavailable

	// Outcomes that are not rejections.

	// Superseded: a pending confirmation replaced by a newer one (its own
	// audit row, not a call's).
	Superseded
	// Timeout: the tool ran past its deadline.
	Timeout
	// Cancelled: the client cancelled the call.
	Cancelled
	// Shutdown: toolhost stopped the call past its shutdown grace.
	Shutdown
	// Panic: the tool or a stage panicked.
	Panic
	// System: any other failure; the model gets a safe message and an error
	// id, the log the whole error.
	System
	// Upstream: an upstream MCP server answered with isError.
	Upstream

	numKinds
)

var kindNames = [numKinds]string{
	None:                "",
	Validation:          "validation",
	Sandbox:             "sandbox",
	Guard:               "guard",
	Policy:              "policy",
	UnknownTool:         "unknown_tool",
	NeedsConfirmation:   "needs_confirmation",
	UserDeclined:        "user_declined",
	UserDenied:          "user_denied",
	ConfirmationFailed:  "confirmation_failed",
	RequestStateInvalid: "request_state_invalid",
	InputRequired:       "input_required",
	Pin:                 "pin",
	Unavailable:         "unavailable",
	Superseded:          "confirmation",
	Timeout:             "timeout",
	Cancelled:           "cancelled",
	Shutdown:            "shutdown",
	Panic:               "panic",
	System:              "system",
	Upstream:            "upstream",
}

// String returns the audit error_kind ("" for None).
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("fault.Kind(%d)", uint8(k))
}

// MarshalText makes a Kind encode as its audit string.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Rejection is an error that stops a call because the call itself is not
// acceptable (as opposed to a system failure). Its message is shown to the
// model as is, so it must say what to change.
type Rejection interface {
	error
	// RejectionKind is one of the rejection kinds (Validation … ConfirmationFailed).
	RejectionKind() Kind
}
