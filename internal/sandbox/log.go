package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/toolhost/toolhost/internal/ndjson"
)

// AppendLog appends data (whole lines) to the log p, created if missing,
// under p's lock, all or nothing: a write that fails part-way (a full disk)
// is cut back to the size the file had before it, so the file holds exactly
// what it held before and no later line is glued onto a fragment. A torn
// last line left by a writer that was killed inside its write is repaired
// first (RepairTail).
//
// With maxBytes > 0, a log that reaches maxBytes is rotated under the same
// lock (RotateLog) once the line is in: no line is ever written to a file
// after it was rotated, which is what lets readers (package ndjson) go
// across the boundary without losing or repeating a line. A rotation that
// fails leaves the line written and is tried again on the next append.
func (s *Sandbox) AppendLog(p string, data []byte, maxBytes int64) error {
	t, dir, err := s.openTarget(p, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	if maxBytes > 0 {
		// The rotated files must be writable too: find out now, not at
		// the rotation, whose failure is only retried.
		if _, err := s.planFile(ndjson.RotatedName(t.rel, 1)); err != nil {
			return fmt.Errorf("%s cannot be rotated: %w", t.rel, err)
		}
	}
	// Refuse a bad leaf before creating its lock file; openAppend checks
	// again under the lock, where it counts.
	if _, err := s.checkLeaf(dir, t); err != nil {
		return err
	}
	unlock, err := s.Lock(t.rel)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.openAppend(dir, t, os.O_RDWR)
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := AppendWhole(f, data)
	if err != nil {
		return fmt.Errorf("append to %s: %w", t.rel, err)
	}
	if maxBytes > 0 && size >= maxBytes {
		_, _ = s.rotateIn(dir, t)
	}
	return nil
}

// AppendWhole appends data to f (opened O_APPEND, readable) as whole lines:
// the file's tail is repaired first (RepairTail), then data is written
// whole or not at all (WriteWhole). The caller holds the file's
// cross-process lock, so no other writer appended in between. It returns
// the file's new size.
func AppendWhole(f *os.File, data []byte) (int64, error) {
	size, _, err := RepairTail(f)
	if err != nil {
		return 0, err
	}
	size, _, err = WriteWhole(f, data, size)
	return size, err
}

// WriteWhole is the one append of a log's lines (AppendLog, the audit
// sink): data is written at the end of f (opened O_APPEND, size bytes long)
// in one write, and on a failed or short write f is truncated back to size,
// so no later line is glued onto a fragment. The caller holds the file's
// cross-process lock. It returns the new size; on failure, intact reports
// whether f is size bytes again (false: the truncation failed too, and what
// f ends with is unknown).
func WriteWhole(f *os.File, data []byte, size int64) (newSize int64, intact bool, err error) {
	n, err := f.Write(data)
	if err == nil {
		return size + int64(n), true, nil
	}
	if terr := f.Truncate(size); terr != nil {
		return 0, false, fmt.Errorf("%w; cutting the partial line back failed too: %v", err, terr)
	}
	return size, true, fmt.Errorf("%w (nothing was appended)", err)
}

// tornWindow is how far back RepairTail looks for the start of a last
// line; toolhost's lines are far shorter.
const tornWindow = 1 << 20

// RepairTail makes f (opened O_APPEND, readable) end with a whole line. A
// last line without its newline was torn by a writer that died inside its
// write (a SIGKILL between two pages of one write(2), a machine crash):
// when it is not valid JSON it is cut off, so the file is as it was before
// that write; when it is (only the newline is missing) the newline is
// added. The caller holds the file's cross-process lock: no write is in
// progress. It returns the file's size afterwards and how many bytes were
// cut.
func RepairTail(f *os.File) (size, cut int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size = fi.Size()
	if size == 0 {
		return 0, 0, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	if last[0] == '\n' {
		return size, 0, nil // the common case: one byte read
	}
	off := max(size-tornWindow, 0)
	tail := make([]byte, size-off)
	if _, err := f.ReadAt(tail, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(tail, '\n')
	frag := tail[i+1:]
	if (i >= 0 || off == 0) && !json.Valid(frag) {
		if err := f.Truncate(size - int64(len(frag))); err != nil {
			return 0, 0, err
		}
		return size - int64(len(frag)), int64(len(frag)), nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		_ = f.Truncate(size)
		return 0, 0, err
	}
	return size + 1, 0, nil
}

// RepairLog repairs the tail of the log p (RepairTail) under p's lock, as
// a session does at start for the shared logs, so readers meet whole lines
// even when no append came after a writer was killed. A missing log is
// left missing. It returns how many bytes were cut.
func (s *Sandbox) RepairLog(p string) (int64, error) {
	t, dir, err := s.openTarget(p, false)
	if err != nil || dir == nil {
		return 0, err
	}
	defer dir.Close()
	fi, err := s.checkLeaf(dir, t)
	if err != nil || fi == nil || fi.Size() == 0 {
		return 0, err
	}
	unlock, err := s.Lock(t.rel)
	if err != nil {
		return 0, err
	}
	defer unlock()
	f, err := s.openAppend(dir, t, os.O_RDWR)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	_, cut, err := RepairTail(f)
	return cut, err
}

// RotateLog renames the log p to its next rotated name (ndjson.RotatedName:
// p's siblings, numbered one past the highest present) and returns that
// name; the next append creates p anew. The caller holds p's lock (Lock(p),
// the lock AppendLog takes), so no append races the rename.
func (s *Sandbox) RotateLog(p string) (string, error) {
	t, dir, err := s.openTarget(p, false)
	if err != nil {
		return "", err
	}
	if dir == nil {
		return "", &fs.PathError{Op: "rotate", Path: p, Err: fs.ErrNotExist}
	}
	defer dir.Close()
	return s.rotateIn(dir, t)
}

func (s *Sandbox) rotateIn(dir *os.Root, t target) (string, error) {
	fi, err := s.checkLeaf(dir, t)
	if err != nil {
		return "", err
	}
	if fi == nil {
		return "", &fs.PathError{Op: "rotate", Path: t.rel, Err: fs.ErrNotExist}
	}
	segs, err := ndjson.Segments(s.root, t.rel)
	if err != nil {
		return "", err
	}
	name := ndjson.RotatedName(t.rel, ndjson.NextIndex(segs))
	nt, err := s.planFile(name)
	if err != nil {
		return "", err
	}
	if fi, err := dir.Lstat(nt.leaf); err == nil || !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			err = fmt.Errorf("%s exists (%s); rotation refuses to replace it", name, fi.Mode())
		}
		return "", err
	}
	if err := dir.Rename(t.leaf, nt.leaf); err != nil {
		return "", err
	}
	syncDir(dir)
	return name, nil
}

// Segments lists the files of the log p (package ndjson).
func (s *Sandbox) Segments(p string) ([]ndjson.Segment, error) {
	c, err := s.clean(p)
	if err != nil {
		return nil, readErr(err)
	}
	return ndjson.Segments(s.root, c)
}
