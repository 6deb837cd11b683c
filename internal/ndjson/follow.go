package ndjson

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Cursor is a position in a log that survives a rotation and a reconnect:
// the file (by inode, which a rename keeps) and the offset after the last
// line delivered.
type Cursor struct {
	Ino uint64 `json:"ino"`
	Off int64  `json:"off"`
}

// FollowOptions tune Follow.
type FollowOptions struct {
	// From resumes after a cursor Follow handed out. Nil starts at the end
	// of the log: only lines written from now on. A cursor whose file is
	// gone (pruned) starts at the oldest file present.
	From *Cursor
	// Poll is how often a quiet log is checked (default 200ms).
	Poll time.Duration
	// MaxLine overrides DefaultMaxLine.
	MaxLine int
}

// DefaultPoll is how often Follow looks for new lines in a quiet log.
const DefaultPoll = 200 * time.Millisecond

// Follow calls fn for every complete line of the log rel, in order, from
// o.From on, until ctx ends (it then returns nil) or fn returns an error
// (returned). When the live file is rotated, the rest of it is read before
// Follow moves on to the file after it, so no line is lost or repeated
// across the boundary: writers append and rotate under one lock, and no
// line is written to a file after it was rotated. A line is delivered only
// once its newline is there; next is the cursor after it.
func Follow(ctx context.Context, root *os.Root, rel string, o FollowOptions, fn func(line []byte, next Cursor) error) error {
	poll := o.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	maxLine := o.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	// With a cursor, a log that does not exist yet is read from its start
	// once it does; without one, from its end.
	fw := &follower{root: root, rel: rel, maxLine: maxLine, fromStart: o.From != nil}
	defer fw.close()
	from := o.From
	for {
		if fw.f == nil {
			if err := fw.start(from); err != nil {
				return err
			}
			from = nil
		}
		if fw.f != nil {
			if err := fw.drain(fn); err != nil {
				return err
			}
			rotated, err := fw.rotated()
			if err != nil {
				return err
			}
			if rotated {
				// The file is complete: take what was appended before the
				// rotation, then go on to the next file from its start.
				if err := fw.drain(fn); err != nil {
					return err
				}
				if err := fw.advance(); err != nil {
					return err
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

type follower struct {
	root    *os.Root
	rel     string
	maxLine int

	f       *os.File
	ino     uint64
	off     int64 // next byte to read
	pending []byte
	skip    bool // inside an overlong line: drop bytes until its newline
	// fromStart: the log did not exist when a cursor was given, so the
	// first file is read from its first line.
	fromStart bool
	// after is the rotation number of the file finished last (0: none) and
	// afterIno its inode: the file to read next is the one after it.
	after    int
	afterIno uint64
}

func (fw *follower) close() {
	if fw.f != nil {
		fw.f.Close()
		fw.f = nil
	}
}

// start opens the file to follow: the cursor's, else the live file at its
// end (after its last complete line). No file yet leaves fw.f nil.
func (fw *follower) start(from *Cursor) error {
	segs, err := Segments(fw.root, fw.rel)
	if err != nil || len(segs) == 0 {
		return err
	}
	if fw.afterIno != 0 {
		return fw.openNext(segs)
	}
	if from != nil {
		for _, s := range segs {
			if s.Ino == from.Ino {
				return fw.open(s, from.Off)
			}
		}
		return fw.open(segs[0], 0)
	}
	live := segs[len(segs)-1]
	if !live.Live() {
		return nil // only rotated files: wait for the next live one
	}
	if fw.fromStart {
		return fw.open(live, 0)
	}
	if err := fw.open(live, live.Size); err != nil {
		return err
	}
	// Start after the last newline, so a line being written is delivered
	// whole once it is complete.
	fw.off = lastLineStart(fw.f, live.Size)
	return nil
}

// open opens segment s at off. A segment is named by its inode: when the
// name now holds another file (the live file was rotated since the
// listing), the file is looked up again under its new name.
func (fw *follower) open(s Segment, off int64) error {
	for range 10 {
		f, err := fw.root.OpenFile(s.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err == nil {
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return err
			}
			if ino(fi) == s.Ino {
				fw.close()
				fw.f, fw.ino, fw.off, fw.pending, fw.skip = f, s.Ino, off, fw.pending[:0], false
				return nil
			}
			f.Close()
		}
		segs, err := Segments(fw.root, fw.rel)
		if err != nil {
			return err
		}
		moved := false
		for _, n := range segs {
			if n.Ino == s.Ino {
				s, moved = n, true
				break
			}
		}
		if !moved {
			return nil // removed: the loop starts again from the listing
		}
	}
	return fmt.Errorf("%s keeps moving while it is being opened", s.Path)
}

// lastLineStart is the offset just after the last newline before size.
func lastLineStart(f *os.File, size int64) int64 {
	const window = 64 << 10
	for end := size; end > 0; {
		start := max(end-window, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return size
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return start + int64(i) + 1
		}
		end = start
	}
	return 0
}

// drain delivers every complete line from fw.off to the end of the file.
func (fw *follower) drain(fn func([]byte, Cursor) error) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := fw.f.ReadAt(buf, fw.off)
		if n > 0 {
			if err := fw.feed(buf[:n], fn); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || n == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// feed splits chunk (read at fw.off) into lines; a partial last line waits
// in pending for its newline, an overlong one is dropped whole.
func (fw *follower) feed(chunk []byte, fn func([]byte, Cursor) error) error {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			fw.off += int64(len(chunk))
			if !fw.skip {
				fw.pending = append(fw.pending, chunk...)
				if len(fw.pending) > fw.maxLine {
					fw.pending, fw.skip = fw.pending[:0], true
				}
			}
			return nil
		}
		fw.off += int64(i + 1)
		line := chunk[:i]
		chunk = chunk[i+1:]
		if fw.skip {
			fw.skip = false
			continue
		}
		if len(fw.pending) > 0 {
			fw.pending = append(fw.pending, line...)
			line = fw.pending
		}
		if len(line) <= fw.maxLine {
			if err := fn(line, Cursor{Ino: fw.ino, Off: fw.off}); err != nil {
				return err
			}
		}
		fw.pending = fw.pending[:0]
	}
	return nil
}

// rotated reports whether the file followed is no longer the live file.
func (fw *follower) rotated() (bool, error) {
	fi, err := fw.root.Lstat(fw.rel)
	if errors.Is(err, fs.ErrNotExist) {
		// Renamed, the next live file not made yet: a rotated file exists
		// with our inode, or ours was removed.
		return fw.renamed()
	}
	if err != nil {
		return false, err
	}
	if ino(fi) == fw.ino {
		return false, nil
	}
	return true, nil
}

func (fw *follower) renamed() (bool, error) {
	segs, err := Segments(fw.root, fw.rel)
	if err != nil {
		return false, err
	}
	for _, s := range segs {
		if s.Ino == fw.ino {
			return true, nil
		}
	}
	return false, nil
}

// advance moves from a rotated file to the one after it (a later rotated
// file or the live one), from its start; when none exists yet the loop
// polls until it does.
func (fw *follower) advance() error {
	// A rotated file ends with a newline; bytes without one are a torn
	// write that will never be completed.
	fw.pending = fw.pending[:0]
	segs, err := Segments(fw.root, fw.rel)
	if err != nil {
		return err
	}
	// Ours not among the rotated files means it was removed: every rotated
	// file present is then older, and the live one comes next.
	after := NextIndex(segs) - 1
	for _, s := range segs {
		if s.Ino == fw.ino && !s.Live() {
			after = s.Index
		}
	}
	fw.close()
	fw.after, fw.afterIno = after, fw.ino
	return fw.openNext(segs)
}

// openNext opens the file that follows the one finished last (fw.after):
// the lowest rotated file numbered above it, else the live file. Nothing
// there yet leaves fw.f nil.
func (fw *follower) openNext(segs []Segment) error {
	for _, s := range segs {
		if s.Live() && s.Ino != fw.afterIno || !s.Live() && s.Index > fw.after {
			return fw.open(s, 0)
		}
	}
	return nil
}
