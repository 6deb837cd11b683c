package e2e

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// immutable reports whether a file has the immutable flag (chattr +i).
func immutable(t *testing.T, p string) bool {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return false
	}
	return flags&0x10 != 0
}

// clearImmutable undoes a control's chattr +i, so the test can clean up.
func clearImmutable(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	if flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS); err == nil {
		_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags&^0x10))
	}
}
