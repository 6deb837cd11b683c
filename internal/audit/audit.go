package audit

import (
	"encoding/json"
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
	StatusDenied    = "denied"
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
	Source     string          `json:"source"`
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

// Appender is the part of the sandbox door the file sink needs.
type Appender interface {
	AppendFile(rel string, data []byte) error
}

// FileSink appends rows as NDJSON lines, one write call per row (O_APPEND, so
// rows from several processes never interleave).
type FileSink struct{ Door Appender }

// Write implements Sink.
func (s FileSink) Write(r *Row) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.Door.AppendFile(Path, append(b, '\n'))
}
