//go:build !linux

package e2e

import (
	"runtime"
	"testing"
)

// immutable skips: the immutable flag checked is Linux's (chattr +i).
func immutable(t *testing.T, _ string) bool {
	t.Helper()
	t.Skipf("the immutable-flag checks are Linux's; %s is not Linux", runtime.GOOS)
	return false
}

// clearImmutable has nothing to undo where immutable skips.
func clearImmutable(*testing.T, string) {}
