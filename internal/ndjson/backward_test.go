package ndjson

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func backward(t *testing.T, root *os.Root, rel string, o Options, n int) ([]string, Cursor) {
	t.Helper()
	var got []string
	end, err := Backward(root, rel, o, func(line []byte) bool {
		got = append(got, string(line))
		return n <= 0 || len(got) < n
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, end
}

// TestBackwardAcrossRotations: lines come newest first across the live
// file and the rotated ones, a line longer than a chunk is whole, an
// overlong one and the live file's unterminated last line are left out,
// rotated files older than Since are not read, and the cursor resumes
// Follow exactly after the newest line.
func TestBackwardAcrossRotations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := strings.Repeat("L", 3*backChunk+17)
	old := time.Now().Add(-48 * time.Hour)
	write(t, dir, "log.000001.ndjson", "1\n2\n", old)
	write(t, dir, "log.000002.ndjson", "3\n"+long+"\n"+strings.Repeat("x", 200)+"\n4\n", time.Time{})
	write(t, dir, "log.ndjson", "5\n\n6\n7-being-writ", time.Time{})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	got, end := backward(t, root, "log.ndjson", Options{MaxLine: len(long)}, 0)
	want := []string{"6", "5", "4", "x", long, "3", "2", "1"}
	want[3] = strings.Repeat("x", 200)
	if !slices.Equal(got, want) {
		t.Fatalf("backward: %d lines %.80q, want %.80q", len(got), got, want)
	}
	got, _ = backward(t, root, "log.ndjson", Options{MaxLine: 100}, 0)
	if want := []string{"6", "5", "4", "3", "2", "1"}; !slices.Equal(got, want) {
		t.Fatalf("overlong lines must be skipped: %q", got)
	}
	got, _ = backward(t, root, "log.ndjson", Options{MaxLine: 100, Since: time.Now().Add(-time.Hour)}, 0)
	if want := []string{"6", "5", "4", "3"}; !slices.Equal(got, want) {
		t.Fatalf("since: %q", got)
	}
	got, _ = backward(t, root, "log.ndjson", Options{}, 3)
	if want := []string{"6", "5", "4"}; !slices.Equal(got, want) {
		t.Fatalf("stopped after 3: %q", got)
	}

	// Follow from the cursor: the line being written when Backward ran
	// comes first, whole, then the lines after it; nothing before it again.
	f, err := os.OpenFile(filepath.Join(dir, "log.ndjson"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("ten\n8\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var followed []string
	err = Follow(ctx, root, "log.ndjson", FollowOptions{From: &end, Poll: 5 * time.Millisecond}, func(line []byte, _ Cursor) error {
		followed = append(followed, string(line))
		if len(followed) == 2 {
			cancel()
		}
		return nil
	})
	if err != nil || !slices.Equal(followed, []string{"7-being-written", "8"}) {
		t.Fatalf("follow from Backward's cursor: %q, %v", followed, err)
	}
}

// TestBackwardReadsFromTheEnd: the tail of a log whose older files are
// huge is read without touching them — a rotated file of 64 GiB (sparse:
// no disk used) that holds no line at all would take minutes to scan.
func TestBackwardReadsFromTheEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "log.000001.ndjson")
	write(t, dir, "log.000001.ndjson", "", time.Time{})
	if err := os.Truncate(big, 64<<30); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	var rows strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&rows, "%d\n", i)
	}
	write(t, dir, "log.000002.ndjson", rows.String(), time.Time{})
	write(t, dir, "log.ndjson", "live\n", time.Time{})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	start := time.Now()
	got, end := backward(t, root, "log.ndjson", Options{}, 501)
	if len(got) != 501 || got[0] != "live" || got[1] != "999" || got[500] != "500" {
		t.Fatalf("tail: %d lines, first %q", len(got), got[:min(3, len(got))])
	}
	fi, _ := os.Stat(filepath.Join(dir, "log.ndjson"))
	if end.Off != fi.Size() {
		t.Errorf("cursor %+v, want the end of the live file (%d)", end, fi.Size())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the tail took %v: the huge rotated file was read", d)
	}
}

// TestBackwardWithoutLiveFile: before the log exists the cursor is the
// start, so Follow reads the first file whole once it appears; with only
// rotated files it resumes after the newest one.
func TestBackwardWithoutLiveFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	got, end := backward(t, root, "log.ndjson", Options{}, 0)
	if len(got) != 0 || end != (Cursor{}) {
		t.Fatalf("empty log: %q %+v", got, end)
	}
	write(t, dir, "log.000001.ndjson", "1\n", time.Time{})
	got, end = backward(t, root, "log.ndjson", Options{}, 0)
	if !slices.Equal(got, []string{"1"}) || end.Ino == 0 {
		t.Fatalf("rotated only: %q %+v", got, end)
	}
	write(t, dir, "log.ndjson", "2\n", time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var followed []string
	err = Follow(ctx, root, "log.ndjson", FollowOptions{From: &end, Poll: 5 * time.Millisecond}, func(line []byte, _ Cursor) error {
		followed = append(followed, string(line))
		cancel()
		return nil
	})
	if err != nil || !slices.Equal(followed, []string{"2"}) {
		t.Fatalf("follow after the rotated file: %q, %v", followed, err)
	}
}
