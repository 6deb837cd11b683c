package smalldisk

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// mount mounts a tmpfs of size bytes on dir until the test ends.
func mount(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Skipf("disk-full tests mount a small tmpfs and this machine refused it (%v); run them where root may mount", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}
