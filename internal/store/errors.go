package store

import (
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/internal/fault"
)

// UnavailableError is a store that cannot be reached now (a database down
// or restarting, a dropped connection): nothing was written, or — for a
// write whose answer was lost — what was written is found again by the
// retry. The model reads Error() as is: it names the store, never the
// driver's text (Err, for the log).
type UnavailableError struct {
	// Store names the store ("PostgreSQL at 127.0.0.1:5432").
	Store string
	Err   error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("the project's shared store (%s) cannot be reached right now; nothing was recorded for this call; call again in a few seconds", e.Store)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// RejectionKind makes the call's outcome fault.Unavailable: retryable, and
// what the model reads is the message above.
func (e *UnavailableError) RejectionKind() fault.Kind { return fault.Unavailable }

// IsUnavailable reports whether err says the store could not be reached.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
