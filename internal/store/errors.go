package store

import (
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/internal/fault"
)

// UnavailableError is a store that cannot be reached now (a database down
// or restarting, a dropped connection): the write that met it was not
// stored — or, when MaybeStored, the database stopped answering after the
// write's commit went out, so it may have been. A call stops at the write
// that fails; what it stored before stays. The model reads Error() as is:
// it names the store, never the driver's text (Err, for the log).
type UnavailableError struct {
	// Store names the store ("PostgreSQL at 127.0.0.1:5432").
	Store string
	// MaybeStored: the commit's answer was lost and the database did not
	// answer again in time to tell. A retry of the same write (its key)
	// finds it rather than storing it twice.
	MaybeStored bool
	Err         error
}

func (e *UnavailableError) Error() string {
	if e.MaybeStored {
		return fmt.Sprintf("the project's shared store (%s) stopped answering while this call's write was being committed, so it may have been stored; if it was, calling again stores it a second time", e.Store)
	}
	return fmt.Sprintf("the project's shared store (%s) cannot be reached right now; the call stopped at a write that was not stored (what it stored before stays); call again in a few seconds", e.Store)
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
