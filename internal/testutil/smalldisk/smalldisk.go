// Package smalldisk mounts a real, small file system (tmpfs) for tests of
// what toolhost does when the disk is full. It is its own package so that
// low-level packages (the sandbox) can use it without importing testutil.
// It must never be imported by non-test code.
package smalldisk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Disk is a mounted tmpfs.
type Disk struct {
	Dir    string
	filler string
}

// New mounts a tmpfs of size bytes on a new temp dir and unmounts
// it when the test ends. Mounting needs root (the project's machines run
// the tests as root) and Linux; elsewhere the test is skipped, saying why.
func New(t testing.TB, size int64) *Disk {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("disk-full tests mount a small tmpfs, which needs root; run the tests as root to include them")
	}
	dir := t.TempDir()
	mount(t, dir, size)
	return &Disk{Dir: dir, filler: filepath.Join(dir, ".filler")}
}

// Fill writes a filler file until the disk is full, leaving free bytes
// (rounded down to what the file system hands out) for the code under test.
func (d *Disk) Fill(t testing.TB, leave int64) {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(d.Dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	f, err := os.OpenFile(d.filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := free - leave
	buf := make([]byte, 64<<10)
	for n > 0 {
		chunk := buf[:min(int64(len(buf)), n)]
		w, err := f.Write(chunk)
		n -= int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Free removes the filler: the disk has its space back.
func (d *Disk) Free(t testing.TB) {
	t.Helper()
	if err := os.Remove(d.filler); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}
