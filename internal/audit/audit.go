package audit

import (
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Path is the default sink, relative to the project dir.
const Path = ".toolhost/audit.ndjson"

// Statuses a row may carry.
const (
	StatusOK        = "ok"
	StatusOKFalse   = "ok_false"
	StatusRejected  = "rejected"
	StatusTimeout   = "timeout"
	StatusCancelled = "cancelled"
	StatusError     = "error"
	// StatusSuperseded marks a pending confirmation that a different call of
	// the same tool in the same session replaced; it is not a call of its
	// own, so it carries the call_id of the call that asked for it.
	StatusSuperseded = "superseded"
)

// Row is one audited call.
type Row struct {
	TS         time.Time       `json:"ts"`
	CallID     string          `json:"call_id"`
	SessionID  string          `json:"session_id,omitempty"`
	ProjectID  string          `json:"pid,omitempty"`
	Agent      string          `json:"agent"`
	UnitID     string          `json:"unit_id,omitempty"`
	Tool       string          `json:"tool"`
	Source     string          `json:"source,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Status     string          `json:"status"`
	ErrorKind  string          `json:"error_kind,omitempty"`
	Error      string          `json:"error,omitempty"`
	ErrorID    string          `json:"error_id,omitempty"`
	RetryCount int             `json:"retry_count"`
	DurationMS float64         `json:"duration_ms"`
	// Sandbox is how the call's commands were confined ("landlock abi 7;
	// write …" or "unconfined: reason"); empty when it started none.
	Sandbox string `json:"sandbox,omitempty"`
	// Traceparent is the W3C trace context the client sent with the call.
	Traceparent string `json:"traceparent,omitempty"`
}

// Sink stores rows.
type Sink interface {
	Write(r *Row) error
}

// Door is the part of the sandbox door the file sink needs.
type Door interface {
	OpenAppend(rel string) (*os.File, error)
	CheckWrite(rel string) (resolved string, err error)
}

// FileSink appends rows as NDJSON lines to .toolhost/audit.ndjson, one
// write call per row on an O_APPEND descriptor, so rows from several
// processes never interleave. The descriptor is opened once through the
// sandbox door and kept: the hot path is one write syscall per call. The
// background loop checks once per interval that the path still names the
// open file (rotated or removed by someone else → reopen on the next row). The line is in the kernel before Write
// returns, so a crash of toolhost loses nothing; fsync is batched (at most
// one per SyncEvery) so a machine crash can lose the rows of the last
// interval.
type FileSink struct {
	door      Door
	syncEvery time.Duration

	mu sync.Mutex
	f  *os.File

	dirty   atomic.Bool
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// linePool recycles the encode buffers of rows: one per call otherwise.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// DefaultSyncEvery is how often written rows are flushed to stable storage.
const DefaultSyncEvery = time.Second

// NewFileSink starts a sink on door; Close flushes and stops it.
func NewFileSink(door Door, syncEvery time.Duration) *FileSink {
	if syncEvery <= 0 {
		syncEvery = DefaultSyncEvery
	}
	s := &FileSink{door: door, syncEvery: syncEvery, stop: make(chan struct{}), stopped: make(chan struct{})}
	go s.syncLoop()
	return s
}

// Write implements Sink.
func (s *FileSink) Write(r *Row) error {
	bp := linePool.Get().(*[]byte)
	b := append(r.AppendJSON((*bp)[:0]), '\n')
	defer func() {
		if cap(b) <= 1<<17 { // a row of capped arguments; bigger ones are not kept
			*bp = b
			linePool.Put(bp)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if err := s.openLocked(); err != nil {
			return err
		}
		_, err := s.f.Write(b)
		if err == nil {
			s.dirty.Store(true)
			return nil
		}
		_ = s.f.Close()
		s.f = nil
		if attempt == 1 {
			return err
		}
	}
}

// Open opens the audit file now (rows open it lazily otherwise), so that a
// project dir that cannot be written is reported at start.
func (s *FileSink) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openLocked()
}

// openLocked opens the audit file through the door unless it is open; the
// caller holds s.mu.
func (s *FileSink) openLocked() error {
	if s.f != nil {
		return nil
	}
	f, err := s.door.OpenAppend(Path)
	if err != nil {
		return err
	}
	s.f = f
	return nil
}

// dropIfStale closes the kept descriptor when the path no longer names it.
func (s *FileSink) dropIfStale() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return
	}
	p, err := s.door.CheckWrite(Path)
	var now, open os.FileInfo
	if err == nil {
		now, err = os.Lstat(p)
	}
	if err == nil {
		open, err = s.f.Stat()
	}
	if err != nil || !os.SameFile(now, open) {
		_ = s.f.Close()
		s.f = nil
	}
}

func (s *FileSink) syncLoop() {
	defer close(s.stopped)
	t := time.NewTicker(s.syncEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = s.Sync()
			s.dropIfStale()
		case <-s.stop:
			_ = s.Sync()
			s.mu.Lock()
			if s.f != nil {
				_ = s.f.Close()
				s.f = nil
			}
			s.mu.Unlock()
			return
		}
	}
}

// Sync flushes the audit file to stable storage if rows were written since
// the last flush.
func (s *FileSink) Sync() error {
	if !s.dirty.Swap(false) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	return s.f.Sync()
}

// Close flushes pending rows and stops the background flusher; safe to call
// twice.
func (s *FileSink) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.stopped
	return nil
}
