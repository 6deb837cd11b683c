//go:build !linux

package e2e

import (
	"runtime"
	"testing"
)

// openTerminal skips: the terminal tests open Linux's /dev/pts.
func openTerminal(t *testing.T, _ identity) *terminal {
	t.Helper()
	t.Skipf("the terminal checks open a Linux pseudo-terminal; %s is not Linux", runtime.GOOS)
	return nil
}
