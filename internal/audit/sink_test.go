package audit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// TestSinkHoldsNoLockBetweenCalls: once Write has returned and no other row
// of the process waits, the trail's lock is free, so another process's
// next row takes it at once instead of waiting for an idle holder. The
// other process is played by an open file description of its own on the
// same lock file (flock locks belong to those), which must get the lock
// without blocking after every row of a sink, including its first (which
// writes the chain's start record) and one after another process wrote.
func TestSinkHoldsNoLockBetweenCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := audit.NewFileSink(auditDoor(t, dir), audit.Options{SyncEvery: time.Hour, Project: "p-1"})
	b := audit.NewFileSink(auditDoor(t, dir), audit.Options{SyncEvery: time.Hour, Project: "p-1"})
	lockFile := func() *os.File {
		m, err := filepath.Glob(filepath.Join(dir, sandbox.LocksDir, "*audit.ndjson.lock"))
		if err != nil || len(m) != 1 {
			t.Fatalf("audit lock file: %v %v", m, err)
		}
		f, err := os.OpenFile(m[0], os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var other *os.File
	for i := range 6 {
		sink := a
		if i%3 == 2 {
			sink = b
		}
		if err := sink.Write(&audit.Row{TS: time.Now(), CallID: fmt.Sprint(i), Agent: "coder", Tool: "t", Status: audit.StatusOK}); err != nil {
			t.Fatal(err)
		}
		if other == nil {
			other = lockFile()
			defer other.Close()
		}
		if err := unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatalf("after row %d the trail's lock is still held: %v", i, err)
		}
		if err := unix.Flock(int(other.Fd()), unix.LOCK_UN); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*audit.FileSink{a, b} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if v := verify(t, dir); v.Problem != nil || v.Rows != 6 {
		t.Fatalf("%d rows, %+v", v.Rows, v.Problem)
	}
}
