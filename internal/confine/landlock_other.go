//go:build !linux

package confine

import "errors"

// abiVersion fails: Landlock is Linux's, so Detect reports no ABI and
// sandbox.commands decides (require refuses, best-effort and off run
// unconfined with the environment filtered).
func abiVersion() (int, error) { return 0, errors.ErrUnsupported }

// Restrict does nothing: no plan is confined on this system (Detect), and
// there are no capabilities, no_new_privs or seccomp to set.
func (p *Plan) Restrict() error { return nil }
