package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/testutil/smalldisk"
)

func logDoor(t *testing.T, dir string) *Sandbox {
	t.Helper()
	s, err := New(dir, "toolhost", []string{"logs/**", ".toolhost/**", "prd/**"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestAppendLogFullDisk appends on a real full tmpfs: every failed append
// leaves the file byte for byte as it was, and once space is back the
// next line lands whole on a line of its own.
func TestAppendLogFullDisk(t *testing.T) {
	disk := smalldisk.New(t, 256<<10)
	s := logDoor(t, disk.Dir)
	line := func(i int) []byte {
		return fmt.Appendf(nil, `{"i":%d,"pad":"%s"}`+"\n", i, strings.Repeat("p", 3000))
	}
	if err := s.AppendLog("logs/a.ndjson", line(0), 0); err != nil {
		t.Fatal(err)
	}
	disk.Fill(t, 5000) // room for one more line and a part of the next
	p := filepath.Join(disk.Dir, "logs", "a.ndjson")
	failed := 0
	for i := 1; i <= 4; i++ {
		before, _ := os.ReadFile(p)
		err := s.AppendLog("logs/a.ndjson", line(i), 0)
		after, _ := os.ReadFile(p)
		if err != nil {
			failed++
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append %d: %v, want ENOSPC", i, err)
			}
			if string(after) != string(before) {
				t.Fatalf("append %d failed but changed the file: %d → %d bytes", i, len(before), len(after))
			}
		}
	}
	if failed == 0 {
		t.Fatal("the disk never filled: the test did not test anything")
	}
	disk.Free(t)
	if err := s.AppendLog("logs/a.ndjson", line(99), 0); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for n, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line %d torn: %.60q", n+1, l)
		}
	}
	if !strings.Contains(lines[len(lines)-1], `"i":99`) {
		t.Fatalf("last line %.40q, want the append after the space came back", lines[len(lines)-1])
	}
}

// TestAppendLogTornTail: a last line torn by a writer killed inside its
// write is cut off before the next line (the file is as it was before that
// write); a last line that only lacks its newline gets one. RepairLog does
// the same without appending.
func TestAppendLogTornTail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, before, want string
		repair             bool
	}{
		{"torn line cut", "{\"i\":1}\n{\"i\":2,\"x", "{\"i\":1}\n{\"i\":3}\n", false},
		{"missing newline added", "{\"i\":1}\n{\"i\":2}", "{\"i\":1}\n{\"i\":2}\n{\"i\":3}\n", false},
		{"a torn first line", "{\"i\":", "{\"i\":3}\n", false},
		{"whole lines kept", "{\"i\":1}\n", "{\"i\":1}\n{\"i\":3}\n", false},
		{"RepairLog cuts", "{\"i\":1}\n{\"i\":2,\"x", "{\"i\":1}\n", true},
		{"RepairLog completes", "{\"i\":1}", "{\"i\":1}\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := logDoor(t, dir)
			p := filepath.Join(dir, "logs", "a.ndjson")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.repair {
				_, err = s.RepairLog("logs/a.ndjson")
			} else {
				err = s.AppendFile("logs/a.ndjson", []byte("{\"i\":3}\n"))
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(p); string(b) != tc.want {
				t.Fatalf("got %q, want %q", b, tc.want)
			}
		})
	}
}

// TestAppendLogRotationConcurrent: writers in parallel on a log that
// rotates every few lines; reading all files back gives every line once,
// in an order where each writer's lines are increasing, and rotated files
// are never written after their rotation (each ends at or past the limit
// with whole lines).
func TestAppendLogRotationConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const writers, each, limit = 6, 200, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A door per writer: the lock is a cross-process flock, and
			// each door opens its own descriptors as a process would.
			s, err := New(dir, "toolhost", []string{"logs/**"})
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for i := range each {
				if err := s.AppendLog("logs/a.ndjson", fmt.Appendf(nil, `{"w":%d,"i":%d}`+"\n", w, i), limit); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	s := logDoor(t, dir)
	segs, err := s.Segments("logs/a.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 10 {
		t.Fatalf("%d files, want many rotations", len(segs))
	}
	for _, sg := range segs[:len(segs)-1] {
		if sg.Size < limit || sg.Size > limit+40 {
			t.Errorf("%s is %d bytes; a rotated file ends with the line that reached %d", sg.Path, sg.Size, limit)
		}
	}
	r, err := ndjson.Open(s.root, "logs/a.ndjson", ndjson.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	last := map[int]int{}
	for w := range writers {
		last[w] = -1
	}
	n := 0
	for r.Next() {
		var e struct{ W, I int }
		if err := json.Unmarshal(r.Line(), &e); err != nil {
			t.Fatalf("%s: %v", r.Pos(), err)
		}
		if e.I != last[e.W]+1 {
			t.Fatalf("%s: writer %d line %d after %d: lost or repeated", r.Pos(), e.W, e.I, last[e.W])
		}
		last[e.W] = e.I
		n++
	}
	if r.Err() != nil || n != writers*each || r.Bad().Count != 0 {
		t.Fatalf("read %d lines (err %v, bad %s), want %d", n, r.Err(), r.Bad(), writers*each)
	}
}

func TestRemoveStaleTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := logDoor(t, dir)
	old := time.Now().Add(-2 * time.Minute)
	mk := func(rel string, mtime time.Time) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := mk("prd/a/"+TempPrefix+"999999999.12345-00aa", old)          // a pid that cannot exist
	older := mk("logs/"+TempPrefix+"0011223344556677", old)              // written by an older toolhost
	mine := mk("prd/"+TempPrefix+s.owner+"-bb", old)                     // this process: alive
	young := mk("prd/"+TempPrefix+"999999999.12345-cc", time.Now())      // too young
	outside := mk("units/"+TempPrefix+"999999999.12345-dd", old)         // not a directory this door writes
	nodeMods := mk("prd/node_modules/"+TempPrefix+"999999999.1-ee", old) // never walked
	busy := mk("logs/busy/"+TempPrefix+"999999999.12345-ff", old)
	unlock, err := s.lock(dirLockName("logs/busy"), syscall.LOCK_SH)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.RemoveStaleTemps(StaleTempAge, time.Now())
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dead, older} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: stale temp file kept", p)
		}
	}
	for _, p := range []string{mine, young, outside, nodeMods, busy} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if n != 2 {
		t.Errorf("removed %d, want 2", n)
	}
	// The busy directory is cleaned once its writer is done.
	if n, err := s.RemoveStaleTemps(StaleTempAge, time.Now()); err != nil || n != 1 {
		t.Errorf("second pass removed %d (%v), want the one in the formerly busy directory", n, err)
	}
}

// TestOpenAppendWhileRotating: a writer that opens a log without its lock
// (the audit sink opens first and takes the lock to write) may find the
// file renamed away by a rotation between its open and its check of the
// leaf. That is not an error: the open is tried again on what is there
// now, and every open returns the file at the path.
func TestOpenAppendWhileRotating(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rot, opener := logDoor(t, dir), logDoor(t, dir)
	const p = "logs/x.ndjson"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := rot.AppendLog(p, []byte("{}\n"), 0); err != nil {
				t.Error(err)
				return
			}
			unlock, err := rot.Lock(p)
			if err != nil {
				t.Error(err)
				return
			}
			_, err = rot.RotateLog(p)
			unlock()
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Error(err)
				return
			}
		}
	}()
	for range 3000 {
		f, err := opener.OpenAppend(p)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("OpenAppend during rotations: %v", err)
		}
		f.Close()
	}
	close(stop)
	wg.Wait()
}
