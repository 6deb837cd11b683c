package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// DefaultMaxBytes is the size at which the trail is rotated
// (--audit-max-bytes).
const DefaultMaxBytes = 64 << 20

// DefaultSyncEvery is how often written rows are flushed to stable storage.
const DefaultSyncEvery = time.Second

// Limits of the rows kept in memory while the file refuses them (a full
// disk): beyond them a row is only logged by the engine.
const (
	maxPendingRows  = 10_000
	maxPendingBytes = 16 << 20
)

// tailWindow is how much of a file's end is read to find its last line;
// a row is far smaller (arguments are capped at MaxArguments).
const tailWindow = 1 << 20

// Door is the part of the sandbox door the file sink needs.
type Door interface {
	ProjectDir() string
	OpenAppend(rel string) (*os.File, error)
	CheckWrite(rel string) (resolved string, err error)
	Locker(name string) (*sandbox.Locker, error)
	RotateLog(rel string) (string, error)
	Segments(rel string) ([]ndjson.Segment, error)
	ReadTail(rel string, n int64) ([]byte, error)
	Update(rel string, fn func(old []byte) ([]byte, error)) error
}

// Options configure a FileSink.
type Options struct {
	// SyncEvery is the fsync interval (DefaultSyncEvery when 0).
	SyncEvery time.Duration
	// MaxBytes rotates the trail at this size: 0 means DefaultMaxBytes, a
	// negative value never rotates.
	MaxBytes int64
	// Project names the project in the chain's start record (its id; the
	// record also holds the project dir).
	Project string
	// Now stamps the chain's records and checkpoints (time.Now when nil).
	Now func() time.Time
}

// FileSink appends rows as NDJSON lines to .toolhost/audit.ndjson, chained
// by hash (see chain.go), shared by every toolhost process of the project.
//
// Each row is one write(2) under the trail's cross-process lock (a flock
// on a lock file kept open): the lock makes the "prev" hash the hash of the
// line really before it, whichever process wrote that, so six processes
// keep one chain. The lock is held for a batch of rows and released as soon
// as this process has no row waiting or another process waits for it
// (acquireLocked), so a hand-off between processes costs the lock's own
// system calls; a process that took the lock anew looks at the file's size,
// and only when another process wrote since does it read the file's last
// line. A failed or short write is cut back
// under the same lock, so the file holds whole lines only, and the row is
// kept in memory (bounded) and written, in order, as soon as the file takes
// rows again. The line is in the kernel before Write returns, so a crash of
// toolhost loses nothing; fsync is batched (at most one per SyncEvery), and
// after each fsync the checkpoint records the chain's durable end.
type FileSink struct {
	door     Door
	opt      Options
	maxBytes int64

	mu   sync.Mutex
	f    *os.File
	lock *sandbox.Locker
	// held: this process holds the trail's lock, kept between the rows of
	// a batch (see acquireLocked).
	held bool
	// queued counts the Write calls waiting for mu: the rows that make the
	// holder keep the lock for them.
	queued atomic.Int32
	// fresh: head is the end of the file as this process left it while
	// holding the lock throughout, so the file need not be looked at.
	fresh bool
	head  head
	// fileID is the chain id read from the open file (its start or
	// continue record), so it is read once per file, not per learn.
	fileID  string
	buf     []byte
	pending [][]byte // bodies of rows (without the closing brace) not yet written
	pendBy  int
	lastErr error

	dirty    atomic.Bool
	stop     chan struct{}
	stopped  chan struct{}
	once     sync.Once
	closeErr error
}

// head is what the sink knows of the end of the chain in the open file.
type head struct {
	known bool
	size  int64 // the file's size after the last line
	seq   int64
	hash  [32]byte
	id    string // the chain id ("" until learned)
	// newline: the file ends in a line without its newline, which the
	// next write puts first.
	newline bool
}

// linePool recycles the encode buffers of rows: one per call otherwise.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// NewFileSink starts a sink on door; Close flushes and stops it.
func NewFileSink(door Door, o Options) *FileSink {
	if o.SyncEvery <= 0 {
		o.SyncEvery = DefaultSyncEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &FileSink{door: door, opt: o, maxBytes: ndjson.RotateAt(o.MaxBytes, DefaultMaxBytes), stop: make(chan struct{}), stopped: make(chan struct{})}
	go s.syncLoop()
	return s
}

// DeferredError is returned for a row the file did not take: the row is
// kept in memory and written once the file takes rows again.
type DeferredError struct {
	Err     error
	Pending int
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("audit row not written yet (%v); kept in memory with %d others, written as soon as the file takes rows again", e.Err, e.Pending-1)
}

func (e *DeferredError) Unwrap() error { return e.Err }

// Write implements Sink.
func (s *FileSink) Write(r *Row) error {
	row := *r
	row.Seq, row.Prev = 0, "" // the chain's to set
	bp := linePool.Get().(*[]byte)
	b := row.AppendJSON((*bp)[:0])
	defer func() {
		if cap(b) <= 1<<17 { // a row of capped arguments; bigger ones are not kept
			*bp = b
			linePool.Put(bp)
		}
	}()
	body := b[:len(b)-1]
	s.queued.Add(1)
	s.mu.Lock()
	s.queued.Add(-1)
	defer s.mu.Unlock()
	err := s.flushPendingLocked()
	if err == nil {
		err = s.appendRowLocked(body)
	}
	if err != nil {
		return s.deferLocked(body, err)
	}
	return nil
}

// deferLocked keeps a row that could not be written, within the limits.
func (s *FileSink) deferLocked(body []byte, err error) error {
	s.lastErr = err
	if len(s.pending) >= maxPendingRows || s.pendBy+len(body) > maxPendingBytes {
		return fmt.Errorf("%w; not kept for later either: %d rows already wait in memory", err, len(s.pending))
	}
	s.pending = append(s.pending, bytes.Clone(body))
	s.pendBy += len(body)
	return &DeferredError{Err: err, Pending: len(s.pending)}
}

// flushPendingLocked writes the rows kept in memory, oldest first, and
// stops at the first that the file still refuses.
func (s *FileSink) flushPendingLocked() error {
	for len(s.pending) > 0 {
		if err := s.appendRowLocked(s.pending[0]); err != nil {
			return err
		}
		s.pendBy -= len(s.pending[0])
		s.pending[0] = nil
		s.pending = s.pending[1:]
	}
	s.pending = nil
	return nil
}

// Open opens the audit file now (rows open it lazily otherwise), so that a
// project dir that cannot be written is reported at start, and finds the
// chain's end under the lock: a new trail gets its start record, a torn
// last line left by a killed writer is repaired before anyone reads it.
func (s *FileSink) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.openLocked(); err != nil {
		return err
	}
	if err := s.acquireLocked(); err != nil {
		return err
	}
	defer s.afterUseLocked()
	return s.currentLocked()
}

func (s *FileSink) openLocked() error {
	if s.lock == nil {
		l, err := s.door.Locker(Path)
		if err != nil {
			return err
		}
		s.lock = l
	}
	if s.f != nil {
		return nil
	}
	f, err := s.door.OpenAppend(Path)
	if err != nil {
		return err
	}
	s.f, s.head = f, head{}
	return nil
}

func (s *FileSink) closeFileLocked() {
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
	s.head, s.fileID, s.fresh = head{}, "", false
}

// errReopened makes the caller look at the end of the chain again: the
// descriptor now names another file.
var errReopened = errors.New("audit file reopened")

// waitingWord is the word of the lock's shared memory that counts the
// processes blocked on the lock: each adds one before it waits and takes
// it off once it holds the lock. (Word 0 is the "wanted" counter older
// builds add to and never take off; reading it as a count would make
// every holder release after each row for good.) A process killed while
// it waits leaves its one counted: holders then release after every row,
// which costs two flock calls a row and is never wrong.
const waitingWord = 1

// acquireLocked takes the trail's cross-process lock unless this process
// still holds it. The lock is held for a batch: the rows this process's
// goroutines queue for it one after another (Write counts them in
// queued), so eight calls in flight pay the lock's two system calls once
// between them, not once each. The batch ends — the lock is released —
// after the row that finds no other row of this process waiting, or after
// the row that finds another process waiting on the lock (waitingWord),
// so no process keeps the lock while it has nothing to write and a waiter
// waits for one row at most. A holder that dies loses the lock with its
// descriptors, as with any flock.
func (s *FileSink) acquireLocked() error {
	if s.held {
		return nil
	}
	words, err := s.lock.Shared()
	if err != nil {
		return fmt.Errorf("lock %s: %w", Path, err)
	}
	words[waitingWord].Add(1)
	err = s.lock.Lock()
	words[waitingWord].Add(^uint64(0))
	if err != nil {
		return fmt.Errorf("lock %s: %w", Path, err)
	}
	s.held, s.fresh = true, false
	return nil
}

// afterUseLocked ends the batch (see acquireLocked) unless another row of
// this process waits for the sink and no other process waits for the
// lock.
func (s *FileSink) afterUseLocked() {
	if !s.held {
		return
	}
	if s.queued.Load() > 0 {
		if words, err := s.lock.Shared(); err == nil && words[waitingWord].Load() == 0 {
			return
		}
	}
	s.releaseLocked()
}

func (s *FileSink) releaseLocked() {
	if s.held {
		s.lock.Unlock()
		s.held, s.fresh = false, false
	}
}

// appendRowLocked writes one row at the end of the chain.
func (s *FileSink) appendRowLocked(body []byte) error {
	if err := s.openLocked(); err != nil {
		return err
	}
	if err := s.acquireLocked(); err != nil {
		return err
	}
	defer s.afterUseLocked()
	if err := s.currentLocked(); err != nil {
		return err
	}
	b := s.buf[:0]
	if s.head.newline {
		b = append(b, '\n')
	}
	start := len(b)
	b = append(AppendChained(b, body, s.head.seq+1, s.head.hash), '\n')
	s.buf = b
	if err := s.writeLineLocked(b, start); err != nil {
		return err
	}
	if s.maxBytes > 0 && s.head.size >= s.maxBytes {
		s.rotateLocked()
	}
	return nil
}

func appendInt(b []byte, n int64) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

// writeLineLocked writes b — a line from start on, with its newline, maybe
// after a newline that closes the file's last line — in one write, or cuts
// the file back to where it was.
func (s *FileSink) writeLineLocked(b []byte, start int) error {
	line := b[start : len(b)-1]
	size, intact, err := sandbox.WriteWhole(s.f, b, s.head.size)
	if err != nil {
		s.head.known = intact
		return err
	}
	s.head.size = size
	s.head.seq++
	s.head.hash = lineHash(line)
	s.head.newline = false
	s.dirty.Store(true)
	return nil
}

// writeRecordLocked appends one of the chain's own records.
func (s *FileSink) writeRecordLocked(rec *ChainRecord) error {
	line := ChainRecordLine(s.opt.Now().UTC(), rec, s.head.seq+1, s.head.hash)
	var b []byte
	if s.head.newline {
		b = append(b, '\n')
	}
	start := len(b)
	b = append(append(b, line...), '\n')
	return s.writeLineLocked(b, start)
}

// currentLocked makes s.head the end of the chain as it is on disk: at
// once when this process held the lock since it last wrote, else by the
// file's size (unchanged: nobody else wrote) or by reading the file's end
// (another process wrote, or the file is new).
func (s *FileSink) currentLocked() error {
	if s.fresh && s.head.known {
		return nil
	}
	for range 4 {
		var st unix.Stat_t
		if err := unix.Fstat(int(s.f.Fd()), &st); err != nil {
			return fmt.Errorf("stat %s: %w", Path, err)
		}
		if s.head.known && st.Size == s.head.size {
			s.fresh = true
			return nil
		}
		err := s.learnLocked(st.Size)
		if err == nil {
			s.fresh = s.head.known
		}
		if !errors.Is(err, errReopened) {
			return err
		}
		if err := s.openLocked(); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s keeps being replaced; the chain's end cannot be found", Path)
}

// learnLocked reads the end of the chain from a file of size bytes. It
// reads a small window of the end first and a larger one only when the
// lines it needs do not fit.
func (s *FileSink) learnLocked(size int64) error {
	s.head = head{}
	if size == 0 {
		return s.beginLocked()
	}
	for _, window := range []int64{2 << 10, 128 << 10, tailWindow} {
		tail, whole, err := readTail(s.f, size, window)
		if err != nil {
			return err
		}
		line, _, complete, found := lastLine(tail, whole)
		if found {
			if l, ok := link(line); ok {
				if l.Chain != nil && l.Chain.Event == ChainRotate {
					return s.finishRotationLocked()
				}
				s.head = head{known: true, size: size, seq: l.Seq, hash: lineHash(line), newline: !complete}
				s.head.id = s.chainIDLocked(l)
				return nil
			}
		}
		if done, err := s.resumeLocked(tail, whole, size, complete); done || whole {
			return err
		}
	}
	// No line of the chain in the last tailWindow bytes: start anew.
	return s.startLocked(size, true)
}

// readTail reads the last window bytes of f (whole when they are the
// entire file).
func readTail(f *os.File, size, window int64) ([]byte, bool, error) {
	off := max(size-window, 0)
	b := make([]byte, size-off)
	n, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	return b[:n], off == 0, nil
}

// chainIDLocked finds the chain id: the record l itself, or the first
// chain record of the open file (its start or continue record), read once
// per file.
func (s *FileSink) chainIDLocked(l linkInfo) string {
	if l.Chain != nil && l.Chain.ID != "" {
		return l.Chain.ID
	}
	if s.fileID != "" {
		return s.fileID
	}
	for _, window := range []int{4 << 10, tailWindow} {
		b := make([]byte, window)
		n, _ := s.f.ReadAt(b, 0)
		lines := bytes.Split(b[:n], []byte{'\n'})
		if n == window {
			lines = lines[:len(lines)-1] // the last one may be cut
		}
		for _, line := range lines {
			if l, ok := link(line); ok && l.Chain != nil && l.Chain.ID != "" {
				s.fileID = l.Chain.ID
				return s.fileID
			}
		}
		if n < window {
			break
		}
	}
	return ""
}

// beginLocked writes the first line of an empty file: a continue record
// when rotated files hold the chain so far, else a start record.
func (s *FileSink) beginLocked() error {
	segs, err := s.door.Segments(Path)
	if err != nil {
		return err
	}
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		if sg.Live() {
			continue
		}
		tail, err := s.door.ReadTail(sg.Path, tailWindow)
		if err != nil {
			return err
		}
		line, _, _, found := lastLine(tail, int64(len(tail)) == sg.Size)
		l, ok := link(line)
		if !found || !ok {
			break // the newest rotated file does not end in the chain: start anew
		}
		id := ""
		if l.Chain != nil {
			id = l.Chain.ID
		}
		s.head = head{known: true, seq: l.Seq, hash: lineHash(line), id: id}
		s.fileID = id
		return s.writeRecordLocked(&ChainRecord{Event: ChainContinue, ID: id, Project: s.opt.Project, Dir: s.door.ProjectDir(), From: sg.Path})
	}
	return s.startLocked(0, false)
}

// startLocked starts a new chain at the end of a file of size bytes;
// newline says the file ends in a line without its newline.
func (s *FileSink) startLocked(size int64, newline bool) error {
	s.head = head{known: true, size: size, id: newChainID(), newline: newline}
	s.fileID = s.head.id
	return s.writeRecordLocked(&ChainRecord{Event: ChainStart, ID: s.head.id, Project: s.opt.Project, Dir: s.door.ProjectDir()})
}

// resumeLocked handles a file whose end is not a line of the chain. A last
// line torn by a writer that died inside its write (not valid JSON, no
// newline) is cut off; anything else (lines written by something else) is
// kept. The chain continues from its last line with a resume record that
// names the length and hash of what was cut or stepped over, so Verify can
// tell a torn write from an insertion. done is false when tail holds no
// line of the chain; a whole file without one (rows from before the chain)
// starts a chain after them.
func (s *FileSink) resumeLocked(tail []byte, whole bool, size int64, complete bool) (done bool, err error) {
	body := tail
	if complete {
		body = tail[:len(tail)-1]
	}
	for end := len(body); end > 0; {
		i := bytes.LastIndexByte(body[:end], '\n')
		if i < 0 && !whole {
			return false, nil
		}
		line := body[i+1 : end]
		if l, ok := link(line); ok {
			after := tail[end+1:]
			rec := &ChainRecord{Event: ChainResume, ID: s.chainIDLocked(l)}
			h := head{known: true, size: size, seq: l.Seq, hash: lineHash(line), id: rec.ID, newline: !complete}
			if !complete && bytes.IndexByte(after, '\n') < 0 && !json.Valid(after) {
				if err := s.f.Truncate(size - int64(len(after))); err != nil {
					return true, err
				}
				h.size, h.newline = size-int64(len(after)), false
				rec.Skipped = &Skipped{Bytes: int64(len(after)), SHA256: hexHash(sha256.Sum256(after)), Cut: true}
			} else {
				if !complete {
					after = append(bytes.Clone(after), '\n')
				}
				rec.Skipped = &Skipped{Bytes: int64(len(after)), SHA256: hexHash(sha256.Sum256(after))}
			}
			s.head = h
			return true, s.writeRecordLocked(rec)
		}
		if i < 0 {
			break
		}
		end = i
	}
	if !whole {
		return false, nil
	}
	return true, s.startLocked(size, !complete)
}

// finishRotationLocked handles a file that ends in a rotate record: either
// another process rotated it and this descriptor is stale, or a rotation
// stopped between its record and the rename, which is done now.
func (s *FileSink) finishRotationLocked() error {
	if same, err := s.atPathLocked(); err != nil || !same {
		s.closeFileLocked()
		if err != nil {
			return err
		}
		return errReopened
	}
	if _, err := s.door.RotateLog(Path); err != nil {
		return err
	}
	s.closeFileLocked()
	return errReopened
}

// atPathLocked reports whether the open descriptor is the file at Path.
func (s *FileSink) atPathLocked() (bool, error) {
	p, err := s.door.CheckWrite(Path)
	if err != nil {
		return false, err
	}
	now, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	open, err := s.f.Stat()
	if err != nil {
		return false, err
	}
	return os.SameFile(now, open), nil
}

// rotateLocked ends the file with a rotate record, makes it durable,
// renames it and starts the next file with a continue record. A step that
// fails is taken up by the next write (a file ending in a rotate record is
// rotated before anything else is written to it).
func (s *FileSink) rotateLocked() {
	segs, err := s.door.Segments(Path)
	if err != nil {
		return
	}
	to := ndjson.RotatedName(Path, ndjson.NextIndex(segs))
	if s.writeRecordLocked(&ChainRecord{Event: ChainRotate, ID: s.head.id, To: to}) != nil {
		return
	}
	// The checkpoint may name a line of this file: it must be on disk
	// before the file stops being the one fsynced.
	_ = s.f.Sync()
	if _, err := s.door.RotateLog(Path); err != nil {
		return
	}
	s.closeFileLocked()
	if s.openLocked() == nil {
		_ = s.currentLocked()
	}
}

// dropIfStale closes the kept descriptor when the path no longer names it
// (the file was moved or removed by someone else).
func (s *FileSink) dropIfStale() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return
	}
	if same, err := s.atPathLocked(); err != nil || !same {
		s.closeFileLocked()
	}
}

func (s *FileSink) syncLoop() {
	defer close(s.stopped)
	t := time.NewTicker(s.opt.SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.mu.Lock()
			_ = s.flushPendingLocked()
			s.mu.Unlock()
			_ = s.Sync()
			s.dropIfStale()
		case <-s.stop:
			s.mu.Lock()
			if err := s.flushPendingLocked(); err != nil {
				s.closeErr = fmt.Errorf("%d audit rows could not be written (they are in the log as audit_write_failed): %w", len(s.pending), err)
			}
			s.mu.Unlock()
			_ = s.Sync()
			s.mu.Lock()
			s.closeFileLocked()
			s.releaseLocked()
			if s.lock != nil {
				_ = s.lock.Close()
				s.lock = nil
			}
			s.mu.Unlock()
			return
		}
	}
}

// Sync flushes the audit file to stable storage if rows were written since
// the last flush, then records the chain's end in the checkpoint.
func (s *FileSink) Sync() error {
	if !s.dirty.Swap(false) {
		return nil
	}
	// The fsync runs on a duplicate of the descriptor, outside the mutex,
	// so rows go on being written while the disk flushes; every line up to
	// h is in the kernel before it starts.
	s.mu.Lock()
	if s.f == nil {
		s.mu.Unlock()
		return nil
	}
	h := s.head
	fd, err := unix.Dup(int(s.f.Fd()))
	s.mu.Unlock()
	if err != nil {
		return err
	}
	err = unix.Fsync(fd)
	_ = unix.Close(fd)
	if err != nil || !h.known || h.seq == 0 || h.id == "" {
		return err
	}
	cp := Checkpoint{ID: h.id, Seq: h.seq, SHA256: hexHash(h.hash), TS: s.opt.Now().UTC()}
	return sandbox.UpdateJSON(s.door, CheckpointPath, func(c *Checkpoint, existed bool) error {
		if existed && c.ID == cp.ID && c.Seq >= cp.Seq {
			return sandbox.ErrUnchanged // another process recorded a later end
		}
		*c = cp
		return nil
	})
}

// Close writes what is still kept in memory, flushes, and stops the
// background flusher; safe to call twice. Its error names rows that could
// not be written even then.
func (s *FileSink) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.stopped
	return s.closeErr
}
