package ndjson

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// indexWidth is the zero-padded width of a rotation number: names sort in
// rotation order up to 999,999 rotations (64 TB of 64 MiB files); past that
// the number only gets wider, and Segments sorts by value anyway.
const indexWidth = 6

// Segment is one file of a log: a rotated file or the live one.
type Segment struct {
	// Path is project-relative, slash-separated.
	Path string
	// Index is the rotation number, 0 for the live file.
	Index   int
	Size    int64
	ModTime time.Time
	// Ino identifies the file across a rename (Cursor uses it).
	Ino uint64
}

// Live reports whether s is the file being appended to.
func (s Segment) Live() bool { return s.Index == 0 }

// split returns rel's directory, its name without the extension and the
// extension (".ndjson").
func split(rel string) (dir, stem, ext string) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	ext = path.Ext(name)
	return dir, strings.TrimSuffix(name, ext), ext
}

// RotatedName is the project-relative name of rotation n of the log rel:
// RotatedName(".toolhost/audit.ndjson", 3) = ".toolhost/audit.000003.ndjson".
func RotatedName(rel string, n int) string {
	dir, stem, ext := split(rel)
	name := fmt.Sprintf("%s.%0*d%s", stem, indexWidth, n, ext)
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// IsRotation reports whether name (project-relative) is a rotated file of
// the log rel: what protects a log protects its rotations too.
func IsRotation(rel, name string) bool {
	dir, stem, ext := split(rel)
	ndir, base := path.Split(name)
	ndir = strings.TrimSuffix(ndir, "/")
	if ndir == "" {
		ndir = "."
	}
	_, ok := rotatedIndex(stem, ext, base)
	return ok && ndir == dir
}

// rotatedIndex returns the rotation number named by a file name of dir
// (0, false when name is not a rotation of the log).
func rotatedIndex(stem, ext, name string) (int, bool) {
	mid, ok := strings.CutPrefix(name, stem+".")
	if !ok {
		return 0, false
	}
	mid, ok = strings.CutSuffix(mid, ext)
	if !ok || len(mid) < indexWidth {
		return 0, false
	}
	for _, c := range mid {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(mid)
	return n, err == nil && n > 0
}

// Segments lists the files of the log rel inside root: its rotated files by
// rotation number, then the live file if it exists. A missing directory is
// an empty log. Only regular files count; anything else with a matching
// name is left out.
//
// A directory listing is not atomic: a rotation between reading the names
// and looking at the files could hide the file being rotated. The listing
// is therefore repeated until two in a row agree.
func Segments(root *os.Root, rel string) ([]Segment, error) {
	prev, err := list(root, rel)
	for range 20 {
		if err != nil {
			return nil, err
		}
		var cur []Segment
		cur, err = list(root, rel)
		if err == nil && sameSegments(prev, cur) {
			return cur, nil
		}
		prev = cur
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s keeps changing while it is listed", rel)
}

func sameSegments(a, b []Segment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Index != b[i].Index || a[i].Ino != b[i].Ino {
			return false
		}
	}
	return true
}

func list(root *os.Root, rel string) ([]Segment, error) {
	dir, stem, ext := split(rel)
	d, err := root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var out []Segment
	live := false
	for _, name := range names {
		n, ok := rotatedIndex(stem, ext, name)
		if !ok {
			live = live || name == stem+ext
			continue
		}
		if seg, ok := stat(root, joinRel(dir, name), n); ok {
			out = append(out, seg)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	if live {
		if seg, ok := stat(root, rel, 0); ok {
			out = append(out, seg)
		}
	}
	return out, nil
}

// RotateAt is the size at which a log is rotated for a configured size
// (--audit-max-bytes, --events-max-bytes, --timeline-max-bytes): 0 means
// the log's default def, a negative value never rotates (0, as
// sandbox.AppendLog reads it).
func RotateAt(configured, def int64) int64 {
	switch {
	case configured == 0:
		return def
	case configured < 0:
		return 0
	}
	return configured
}

// NextIndex is the rotation number the next rotation of rel gets: one past
// the highest present (never reused, so names only ever grow).
func NextIndex(segs []Segment) int {
	n := 0
	for _, s := range segs {
		n = max(n, s.Index)
	}
	return n + 1
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func stat(root *os.Root, rel string, n int) (Segment, bool) {
	fi, err := root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return Segment{}, false
	}
	return segmentOf(rel, n, fi), true
}

func segmentOf(rel string, n int, fi fs.FileInfo) Segment {
	return Segment{Path: rel, Index: n, Size: fi.Size(), ModTime: fi.ModTime(), Ino: ino(fi)}
}

func ino(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
