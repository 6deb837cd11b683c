package tool

import (
	"errors"
	"fmt"
	"strings"
)

// Rejection is an error that stops a call before or while it runs because
// the call itself is not acceptable (as opposed to a system failure). Its
// message is shown to the model as is.
type Rejection interface {
	error
	// RejectionKind is the audit error kind: validation, sandbox, guard,
	// policy, confirmation, unknown_tool.
	RejectionKind() string
}

// ValidationError is an input that does not match the tool's schema or rules.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" || strings.HasPrefix(e.Reason, e.Field+": ") {
		return e.Reason
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

// RejectionKind implements Rejection.
func (e *ValidationError) RejectionKind() string { return "validation" }

// ErrDenied is matched with errors.Is for every policy denial.
var ErrDenied = errors.New("denied by policy")

// PermissionError is a call the agent's toolPolicy or the policy file does
// not permit.
type PermissionError struct {
	Tool   string
	Agent  string
	Detail string
}

func (e *PermissionError) Error() string {
	if e.Detail != "" {
		return e.Detail
	}
	return fmt.Sprintf("tool %s is not allowed for agent %s", e.Tool, e.Agent)
}

// RejectionKind implements Rejection.
func (e *PermissionError) RejectionKind() string { return "policy" }

// Is makes errors.Is(err, ErrDenied) true.
func (e *PermissionError) Is(target error) bool { return target == ErrDenied }

// TransientError marks a fault worth retrying for read tools: a timed-out
// attempt, a refused or reset connection, an upstream 502/503/504.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// Transient wraps err as a TransientError.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &TransientError{Err: err}
}
