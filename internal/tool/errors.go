package tool

import (
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/internal/fault"
)

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

// RejectionKind makes the error a fault.Rejection.
func (e *ValidationError) RejectionKind() fault.Kind { return fault.Validation }

// PermissionError is a call the agent's toolPolicy or the policy file does
// not permit, or of a tool that is withheld.
type PermissionError struct {
	Tool string
	// Reason names the rule that refused the call (policy.Access.Reason).
	Reason string
	// Kind is why (policy.Access.Kind); fault.None means fault.Policy.
	Kind fault.Kind
}

func (e *PermissionError) Error() string { return e.Reason }

// RejectionKind makes the error a fault.Rejection.
func (e *PermissionError) RejectionKind() fault.Kind {
	if e.Kind == fault.None {
		return fault.Policy
	}
	return e.Kind
}

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
