package e2e

import (
	"fmt"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// openTerminal opens a new pseudo-terminal through Linux's /dev/ptmx.
func openTerminal(t *testing.T, id identity) *terminal {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tt := &terminal{master: m, path: fmt.Sprintf("/dev/pts/%d", n)}
	if tt.slave, err = os.OpenFile(tt.path, os.O_RDWR|unix.O_NOCTTY, 0); err != nil {
		t.Fatal(err)
	}
	if id.uid >= 0 {
		if err := os.Chown(tt.path, id.uid, id.uid); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _, _ = io.Copy(io.Discard, m) }()
	t.Cleanup(func() {
		tt.slave.Close()
		m.Close()
	})
	return tt
}
