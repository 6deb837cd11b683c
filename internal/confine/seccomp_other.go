//go:build !linux

package confine

import "runtime"

// filterMissing: seccomp is Linux's.
func filterMissing() string { return runtime.GOOS + " has no seccomp filters" }

// seccompProgram is never built here.
type seccompProgram struct{}

// buildFilter has nothing to build (filterMissing).
func (p *Plan) buildFilter() error { return nil }
