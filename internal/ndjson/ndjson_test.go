package ndjson

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, dir, rel, content string, mtime time.Time) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNamesAndSegments(t *testing.T) {
	t.Parallel()
	if got := RotatedName(".toolhost/audit.ndjson", 3); got != ".toolhost/audit.000003.ndjson" {
		t.Errorf("RotatedName = %s", got)
	}
	if got := RotatedName("timeline.ndjson", 1234567); got != "timeline.1234567.ndjson" {
		t.Errorf("RotatedName past six digits = %s", got)
	}
	dir := t.TempDir()
	for _, n := range []string{"log.ndjson", "log.000002.ndjson", "log.1000000.ndjson", "log.000010.ndjson",
		"log.12.ndjson", "log.00000x.ndjson", "log.000003.json", "other.000001.ndjson"} {
		write(t, dir, "d/"+n, "{}\n", time.Time{})
	}
	if err := os.Mkdir(filepath.Join(dir, "d", "log.000004.ndjson"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	segs, err := Segments(root, "d/log.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range segs {
		names = append(names, s.Path)
	}
	want := []string{"d/log.000002.ndjson", "d/log.000010.ndjson", "d/log.1000000.ndjson", "d/log.ndjson"}
	if !slices.Equal(names, want) {
		t.Fatalf("segments %v, want %v (numbers by value, the live file last, no directory, no foreign names)", names, want)
	}
	if NextIndex(segs) != 1000001 {
		t.Errorf("NextIndex = %d", NextIndex(segs))
	}
}

// TestReaderSinceAndBadLines: whole rotated files older than Since are not
// read; an overlong line is skipped and reported without being held; a
// rejected line is reported with its file and line.
func TestReaderSinceAndBadLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	write(t, dir, "log.000001.ndjson", "{\"n\":1}\n{\"n\":2}\n", old)
	write(t, dir, "log.000002.ndjson", "{\"n\":3}\n"+strings.Repeat("x", 100)+"\n{\"n\":4}\n", time.Time{})
	write(t, dir, "log.ndjson", "{\"n\":5}\nnot json\n{\"n\":6}", time.Time{})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	read := func(o Options) (lines []string, r *Reader) {
		r, err := Open(root, "log.ndjson", o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			if !strings.HasPrefix(string(r.Line()), "{") {
				r.Reject("not JSON")
				continue
			}
			lines = append(lines, fmt.Sprintf("%s=%s", r.Pos(), r.Line()))
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		return lines, r
	}
	all, r := read(Options{MaxLine: 50})
	want := []string{`log.000001.ndjson:1={"n":1}`, `log.000001.ndjson:2={"n":2}`, `log.000002.ndjson:1={"n":3}`,
		`log.000002.ndjson:3={"n":4}`, `log.ndjson:1={"n":5}`, `log.ndjson:3={"n":6}`}
	if !slices.Equal(all, want) {
		t.Fatalf("lines %v, want %v", all, want)
	}
	if b := r.Bad(); b.Count != 2 || b.First[0].String() != "log.000002.ndjson:2" || b.First[1].Line != 2 || !strings.Contains(b.String(), "longer than 50 bytes") {
		t.Errorf("bad lines %s", b)
	}
	recent, r := read(Options{Since: time.Now().Add(-time.Hour)})
	if len(recent) != 4 || r.Skipped() != 1 || r.Files() != 2 {
		t.Errorf("since: %v, skipped %d of %d files", recent, r.Skipped(), r.Files()+r.Skipped())
	}
}

func TestIsRotation(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"timeline.000001.ndjson": true, "timeline.1234567.ndjson": true, "timeline.ndjson": false,
		"timeline.00001.ndjson": false, "x/timeline.000001.ndjson": false, "timeline.000001.json": false,
	} {
		if got := IsRotation("timeline.ndjson", name); got != want {
			t.Errorf("IsRotation(timeline.ndjson, %s) = %v", name, got)
		}
	}
	if !IsRotation(".toolhost/audit.ndjson", ".toolhost/audit.000002.ndjson") || IsRotation(".toolhost/audit.ndjson", "audit.000002.ndjson") {
		t.Error("rotations live in the log's directory")
	}
}
