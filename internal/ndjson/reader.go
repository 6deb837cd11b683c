package ndjson

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// DefaultMaxLine is the longest line a Reader hands out; a longer one is
// reported as bad and skipped without being held in memory. toolhost's own
// lines are far shorter (an audit row's arguments are capped at 64 KiB).
const DefaultMaxLine = 16 << 20

// Options tune a Reader.
type Options struct {
	// Since skips every rotated file last written before this instant: all
	// its lines are older. Lines of the files read are not filtered here.
	Since time.Time
	// MaxLine overrides DefaultMaxLine.
	MaxLine int
}

// Pos is where a line is.
type Pos struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`   // 1-based within Path
	Offset int64  `json:"offset"` // of the line's first byte
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.Path, p.Line) }

// BadLine is a line that was skipped, and why.
type BadLine struct {
	Pos
	Reason string `json:"reason"`
}

// maxReported is how many bad lines BadLines keeps by position; the rest
// are only counted.
const maxReported = 5

// BadLines counts the skipped lines of a read and keeps the first few.
type BadLines struct {
	Count int
	First []BadLine
}

// Add records a skipped line.
func (b *BadLines) Add(p Pos, reason string) {
	b.Count++
	if len(b.First) < maxReported {
		b.First = append(b.First, BadLine{Pos: p, Reason: reason})
	}
}

// String says how many lines were skipped and where the first ones are,
// e.g. "2 lines skipped: .toolhost/audit.ndjson:17 (not JSON), …:18 (…)".
func (b BadLines) String() string {
	if b.Count == 0 {
		return ""
	}
	parts := make([]string, len(b.First))
	for i, l := range b.First {
		parts[i] = fmt.Sprintf("%s (%s)", l.Pos, l.Reason)
	}
	s := fmt.Sprintf("%d line", b.Count)
	if b.Count > 1 {
		s += "s"
	}
	s += " skipped: " + strings.Join(parts, ", ")
	if b.Count > len(b.First) {
		s += ", …"
	}
	return s
}

// Reader streams the lines of a log, oldest first, across its rotated
// files. It reads a consistent snapshot: the live file is opened before the
// rotated ones are listed, so a rotation during the read neither loses nor
// repeats a file (lines appended after Open may or may not be read).
type Reader struct {
	root      *os.Root
	closeRoot bool
	segs      []Segment
	live      *os.File // opened at Open, read last
	maxLine   int

	i    int // index into segs of the file being read
	f    *os.File
	br   *bufio.Reader
	buf  []byte
	line []byte
	term bool
	pos  Pos
	off  int64
	n    int

	err     error
	bad     BadLines
	skipped int
}

// Open starts reading the log rel (project-relative) inside root.
func Open(root *os.Root, rel string, o Options) (*Reader, error) {
	r := &Reader{root: root, maxLine: o.MaxLine, i: -1}
	if r.maxLine <= 0 {
		r.maxLine = DefaultMaxLine
	}
	var liveSeg Segment
	live, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		fi, err := live.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			live.Close()
			return nil, fmt.Errorf("%s is not a regular file", rel)
		}
		r.live, liveSeg = live, segmentOf(rel, 0, fi)
	}
	segs, err := Segments(root, rel)
	if err != nil {
		r.Close()
		return nil, err
	}
	for _, s := range segs {
		switch {
		case s.Live():
			// Listed from the directory; the file opened first stands for it.
		case r.live != nil && s.Ino == liveSeg.Ino:
			// The live file was rotated between the open and the listing:
			// it is read once, as the last file.
		case !o.Since.IsZero() && s.ModTime.Before(o.Since):
			r.skipped++
		default:
			r.segs = append(r.segs, s)
		}
	}
	if r.live != nil {
		if !o.Since.IsZero() && liveSeg.ModTime.Before(o.Since) {
			r.skipped++
		} else {
			r.segs = append(r.segs, liveSeg)
		}
	}
	return r, nil
}

// OpenDir is Open on a project dir given by path; Close releases it.
func OpenDir(projectDir, rel string, o Options) (*Reader, error) {
	root, err := os.OpenRoot(projectDir)
	if err != nil {
		return nil, err
	}
	r, err := Open(root, rel, o)
	if err != nil {
		root.Close()
		return nil, err
	}
	r.closeRoot = true
	return r, nil
}

// Files is how many files the read covers; Skipped how many Since left out.
func (r *Reader) Files() int   { return len(r.segs) }
func (r *Reader) Skipped() int { return r.skipped }

// Next advances to the next line; false at the end or on an error (Err).
func (r *Reader) Next() bool {
	for r.err == nil {
		if r.br == nil && !r.nextFile() {
			return false
		}
		line, ok := r.readLine()
		if ok {
			r.line = line
			return true
		}
	}
	return false
}

// Line is the current line without its newline; valid until Next.
func (r *Reader) Line() []byte { return r.line }

// Pos is where the current line is.
func (r *Reader) Pos() Pos { return r.pos }

// Terminated reports whether the current line ended with a newline (only
// the last line of a file may not: a torn write, or one in progress).
func (r *Reader) Terminated() bool { return r.term }

// Segment is the file the current line is in.
func (r *Reader) Segment() Segment { return r.segs[r.i] }

// Reject records the current line as bad: the consumer could not parse it.
func (r *Reader) Reject(reason string) { r.bad.Add(r.pos, reason) }

// Bad reports the lines skipped so far (overlong ones and rejected ones).
func (r *Reader) Bad() BadLines { return r.bad }

// Err is the first read error (nil at a clean end).
func (r *Reader) Err() error { return r.err }

// Close releases the files.
func (r *Reader) Close() error {
	if r.f != nil && r.f != r.live {
		r.f.Close()
	}
	if r.live != nil {
		r.live.Close()
	}
	r.f, r.live, r.br = nil, nil, nil
	if r.closeRoot {
		r.closeRoot = false
		return r.root.Close()
	}
	return nil
}

func (r *Reader) nextFile() bool {
	if r.f != nil && r.f != r.live {
		r.f.Close()
	}
	r.f, r.br = nil, nil
	for r.i+1 < len(r.segs) {
		r.i++
		s := r.segs[r.i]
		if s.Live() {
			r.f = r.live
		} else {
			f, err := r.root.OpenFile(s.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the listing (pruned by someone)
			}
			if err != nil {
				r.err = err
				return false
			}
			r.f = f
		}
		if r.br == nil {
			r.br = bufio.NewReaderSize(r.f, 64<<10)
		} else {
			r.br.Reset(r.f)
		}
		r.off, r.n = 0, 0
		return true
	}
	return false
}

// readLine reads one line of the current file. ok is false at the end of
// the file (r.br is then nil) and for a skipped overlong line.
func (r *Reader) readLine() (line []byte, ok bool) {
	r.buf = r.buf[:0]
	start := r.off
	over := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.off += int64(len(chunk))
		if !over {
			if len(r.buf)+len(chunk) > r.maxLine+1 {
				over = true
				r.buf = r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(r.buf) == 0 && !over {
				r.br = nil
				return nil, false
			}
		default:
			r.err = fmt.Errorf("read %s: %w", r.segs[r.i].Path, err)
			return nil, false
		}
		r.n++
		r.pos = Pos{Path: r.segs[r.i].Path, Line: r.n, Offset: start}
		if over {
			r.bad.Add(r.pos, fmt.Sprintf("longer than %d bytes", r.maxLine))
			return nil, false
		}
		r.term = len(r.buf) > 0 && r.buf[len(r.buf)-1] == '\n'
		return trimNewline(r.buf), true
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}
