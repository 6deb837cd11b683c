package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/redact"
)

// Paths of the shared logs, relative to the project dir.
const (
	EventsPath   = ".toolhost/events.ndjson"
	TimelinePath = "timeline.ndjson"
)

// ServiceAllowList is the allow-list of the services' sandbox: the shared
// logs, toolhost's own state and the bug tracker.
var ServiceAllowList = []string{TimelinePath, ".toolhost/**", "bugs/**"}

// Door is the part of the sandbox the journal needs.
type Door interface {
	AppendFile(rel string, data []byte) error
	ReadTail(rel string, n int64) ([]byte, error)
	Lock(name string) (func(), error)
}

// Events appends events as NDJSON lines.
type Events struct{ Door Door }

// Emit implements callctx.Events.
func (e Events) Emit(ev callctx.Event) error {
	b, err := redact.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", ev.Kind, err)
	}
	return e.Door.AppendFile(EventsPath, append(b, '\n'))
}

// Timeline appends timeline entries with a cross-process sequence number.
type Timeline struct{ Door Door }

// tailWindow is how much of the end of the timeline is read to find the
// last seq; one entry is far smaller.
const tailWindow = 256 << 10

// Append implements callctx.Timeline. Under the timeline lock it reads the
// last entry's seq from the end of the file and appends the next one in a
// single write, so seq is strictly increasing across processes and derived
// from what is really on disk (no counter that a crash could leave behind).
func (t Timeline) Append(e callctx.TimelineEntry) (int64, error) {
	unlock, err := t.Door.Lock("timeline")
	if err != nil {
		return 0, err
	}
	defer unlock()
	last, torn, err := t.lastSeq()
	if err != nil {
		return 0, err
	}
	e.Seq = last + 1
	// What an agent or a tool writes to the timeline keeps no credential.
	line, err := redact.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("encode timeline entry: %w", err)
	}
	if torn {
		// A crash left a partial last line: start ours on a line of its own.
		line = append([]byte{'\n'}, line...)
	}
	if err := t.Door.AppendFile(TimelinePath, append(line, '\n')); err != nil {
		return 0, err
	}
	return e.Seq, nil
}

// lastSeq returns the seq of the last complete entry (0 for a new
// timeline) and whether the file ends in a partial line. It reads the file's
// end, and the whole file only when the last entries are larger than that
// window.
func (t Timeline) lastSeq() (seq int64, torn bool, err error) {
	for _, window := range []int64{tailWindow, math.MaxInt64} {
		b, err := t.Door.ReadTail(TimelinePath, window)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		torn = len(b) > 0 && b[len(b)-1] != '\n'
		if seq, ok := lastSeqIn(b); ok {
			return seq, torn, nil
		}
		if int64(len(b)) < window {
			break
		}
	}
	return 0, false, &fault.CorruptFile{Path: TimelinePath, Format: "NDJSON"}
}

// lastSeqIn finds the seq of the last parseable line of b, walking back
// from the end line by line (the last line is nearly always the one).
func lastSeqIn(b []byte) (int64, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return 0, true
	}
	rest := bytes.TrimRight(b, "\n")
	for {
		i := bytes.LastIndexByte(rest, '\n')
		var e struct {
			Seq int64 `json:"seq"`
		}
		if json.Unmarshal(rest[i+1:], &e) == nil && e.Seq > 0 {
			return e.Seq, true
		}
		if i < 0 {
			return 0, false
		}
		rest = rest[:i]
	}
}
