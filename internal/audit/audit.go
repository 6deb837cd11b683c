package audit

import (
	"encoding/json"
	"errors"
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
	PID        string          `json:"pid,omitempty"`
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
}

// Sink stores rows.
type Sink interface {
	Write(r *Row) error
}

// Door is the part of the sandbox door the file sink needs.
type Door interface {
	AppendFile(rel string, data []byte) error
	CheckWrite(rel string) (resolved string, err error)
}

// FileSink appends rows as NDJSON lines to .toolhost/audit.ndjson, one
// write call per row on an O_APPEND descriptor, so rows from several
// processes never interleave. The line is in the kernel before Write
// returns, so a crash of toolhost loses nothing; fsync is batched (at most
// one per SyncEvery) so a machine crash can lose the rows of the last
// interval.
type FileSink struct {
	door      Door
	syncEvery time.Duration

	dirty   atomic.Bool
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

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
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := s.door.AppendFile(Path, append(b, '\n')); err != nil {
		return err
	}
	s.dirty.Store(true)
	return nil
}

func (s *FileSink) syncLoop() {
	defer close(s.stopped)
	t := time.NewTicker(s.syncEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = s.Sync()
		case <-s.stop:
			_ = s.Sync()
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
	p, err := s.door.CheckWrite(Path)
	if err != nil {
		return err
	}
	// fsync on any descriptor of the file flushes its data; a read-only
	// open keeps the write door the only writer.
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// Close flushes pending rows and stops the background flusher; safe to call
// twice.
func (s *FileSink) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.stopped
	return nil
}
