//go:build !linux

package smalldisk

import (
	"runtime"
	"testing"
)

// mount skips the test: only Linux's tmpfs takes a size at mount time.
func mount(t testing.TB, _ string, _ int64) {
	t.Helper()
	t.Skipf("disk-full tests mount a small Linux tmpfs; %s has none", runtime.GOOS)
}
