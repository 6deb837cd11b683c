package ndjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// backChunk is how much of a file Backward reads at a time.
const backChunk = 64 << 10

// Backward calls fn with the complete lines of the log rel, newest first,
// across its rotated files, until fn returns false or the oldest line was
// handed out. It reads from the end of each file, one chunk at a time, so
// what it costs depends on how many lines fn takes, not on the size of the
// log: the tail of a trail of gigabytes is read in milliseconds. The line is
// valid only until fn returns; lines longer than o.MaxLine are skipped
// without being held in memory, and rotated files last written before
// o.Since are not read (all their lines are older).
//
// It returns the cursor after the newest complete line (Follow's From): a
// live view shows the lines Backward gave it, then follows from there
// without losing or repeating a line written meanwhile. When the log does
// not exist yet the cursor is the start of its first file.
func Backward(root *os.Root, rel string, o Options, fn func(line []byte) bool) (Cursor, error) {
	live, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		live = nil
	case err != nil:
		return Cursor{}, err
	}
	var liveSeg Segment
	if live != nil {
		defer live.Close()
		fi, err := live.Stat()
		if err != nil {
			return Cursor{}, err
		}
		if !fi.Mode().IsRegular() {
			return Cursor{}, fmt.Errorf("%s is not a regular file", rel)
		}
		liveSeg = segmentOf(rel, 0, fi)
	}
	// The live file is opened before the rotated ones are listed, as in
	// Open: a rotation in between shows the same inode among the rotated
	// files, which is then read once, as the newest.
	segs, err := Segments(root, rel)
	if err != nil {
		return Cursor{}, err
	}
	var older []Segment
	for _, s := range segs {
		if !s.Live() && (live == nil || s.Ino != liveSeg.Ino) {
			older = append(older, s)
		}
	}
	var end Cursor
	b := &backReader{fn: fn, maxLine: o.MaxLine}
	if b.maxLine <= 0 {
		b.maxLine = DefaultMaxLine
	}
	if live != nil {
		size := lastLineStart(live, liveSeg.Size)
		end = Cursor{Ino: liveSeg.Ino, Off: size}
		if !b.file(live, size) {
			return end, b.err
		}
	} else if len(older) > 0 {
		// No live file: Follow goes on from the end of the newest rotated
		// one to the live file, once it exists.
		s := older[len(older)-1]
		end = Cursor{Ino: s.Ino, Off: s.Size}
	}
	for i := len(older) - 1; i >= 0; i-- {
		s := older[i]
		if !o.Since.IsZero() && s.ModTime.Before(o.Since) {
			break
		}
		f, err := root.OpenFile(s.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned since the listing
		}
		if err != nil {
			return end, err
		}
		fi, err := f.Stat()
		if err != nil || ino(fi) != s.Ino {
			f.Close()
			continue // the name holds another file now: ours was removed
		}
		more := b.file(f, lastLineStart(f, fi.Size()))
		f.Close()
		if !more {
			return end, b.err
		}
	}
	return end, nil
}

// backReader splits files into lines from their end.
type backReader struct {
	fn      func([]byte) bool
	maxLine int
	buf     []byte
	line    []byte
	err     error
}

// file hands out the lines of f before size (the end of its last complete
// line), newest first; false when fn stopped or a read failed (b.err).
func (b *backReader) file(f *os.File, size int64) bool {
	if b.buf == nil {
		b.buf = make([]byte, backChunk)
	}
	// pieces are the parts of the line being assembled, newest part first
	// (a line longer than a chunk spans several reads).
	var pieces [][]byte
	partLen, over := 0, false
	emit := func(first []byte) bool {
		if over {
			pieces, partLen, over = pieces[:0], 0, false
			return true
		}
		b.line = append(b.line[:0], first...)
		for i := len(pieces) - 1; i >= 0; i-- {
			b.line = append(b.line, pieces[i]...)
		}
		pieces, partLen = pieces[:0], 0
		if len(b.line) == 0 {
			return true
		}
		return b.fn(b.line)
	}
	for pos := size; pos > 0; {
		start := max(pos-backChunk, 0)
		chunk := b.buf[:pos-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			b.err = err
			return false
		}
		pos = start
		j := len(chunk)
		// The chunk ends where a newline is (size is after one) or where
		// the previous chunk began.
		if pos+int64(j) == size && j > 0 && chunk[j-1] == '\n' {
			j--
		}
		for {
			i := bytes.LastIndexByte(chunk[:j], '\n')
			if i < 0 {
				part := chunk[:j]
				if partLen += len(part); partLen > b.maxLine {
					over, pieces = true, pieces[:0]
				} else if !over {
					pieces = append(pieces, append([]byte(nil), part...))
				}
				break
			}
			if partLen+j-i-1 > b.maxLine {
				over = true
			}
			if !emit(chunk[i+1 : j]) {
				return false
			}
			j = i
		}
	}
	return emit(nil)
}
