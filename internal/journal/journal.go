package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/store"
)

// Paths of the shared logs, relative to the project dir.
const (
	EventsPath   = ".toolhost/events.ndjson"
	TimelinePath = "timeline.ndjson"
)

// ServiceAllowList is the allow-list of the services' sandbox: the shared
// logs (the timeline with its rotated files), toolhost's own state and the
// bug tracker.
var ServiceAllowList = []string{TimelinePath, "timeline.*.ndjson", ".toolhost/**", "bugs/**"}

// Sizes at which the logs are rotated (sandbox.AppendLog) unless the
// session says otherwise. Events are machine-read and followed (a live view
// tails them), like the audit trail; the timeline is the agents' log that
// people open in an editor, so its files stay smaller.
const (
	DefaultEventsMaxBytes   = 64 << 20
	DefaultTimelineMaxBytes = 16 << 20
)

// Door is the part of the sandbox the journal needs.
type Door interface {
	AppendLog(rel string, data []byte, maxBytes int64) error
	ReadTail(rel string, n int64) ([]byte, error)
	Lock(name string) (func(), error)
	Segments(rel string) ([]ndjson.Segment, error)
	RepairLog(rel string) (cut int64, err error)
}

// Repair repairs the tails of the events and the timeline (a last line
// torn by a writer that was killed inside its write is cut off), as a
// session does at start, so readers meet whole lines even when nothing was
// appended since. It returns how many bytes were cut.
func Repair(d Door) (int64, error) {
	var total int64
	for _, p := range []string{EventsPath, TimelinePath} {
		cut, err := d.RepairLog(p)
		total += cut
		if err != nil {
			return total, fmt.Errorf("repair %s: %w", p, err)
		}
	}
	return total, nil
}

// Events appends events as NDJSON lines.
type Events struct {
	Door Door
	// MaxBytes rotates events.ndjson at this size (0: the default, < 0: never).
	MaxBytes int64
}

// Emit appends one event. The line lands whole or not at all.
func (e Events) Emit(ev store.Event) error {
	b, err := redact.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", ev.Kind, err)
	}
	return e.Door.AppendLog(EventsPath, append(b, '\n'), ndjson.RotateAt(e.MaxBytes, DefaultEventsMaxBytes))
}

// Timeline appends timeline entries with a cross-process sequence number.
type Timeline struct {
	Door Door
	// MaxBytes rotates timeline.ndjson at this size (0: the default, < 0:
	// never).
	MaxBytes int64
}

// Windows of the end of the timeline read to find the last seq: a small
// one first (an entry is nearly always far smaller: reading 256 KiB per
// append cost a timeline_append most of its CPU in copying and garbage),
// then tailWindow, then the whole file (an entry larger than that).
const (
	firstWindow = 4 << 10
	tailWindow  = 256 << 10
)

// Append appends one entry. Under the timeline lock it reads the
// last entry's seq from the end of the timeline and appends the next one in
// a single all-or-nothing write, so seq is strictly increasing across
// processes and derived from what is really on disk (no counter that a
// crash could leave behind). The rotation of the file happens inside the
// same lock, so seq runs on across the boundary.
func (t Timeline) Append(e store.TimelineEntry) (int64, error) {
	unlock, err := t.Door.Lock("timeline")
	if err != nil {
		return 0, err
	}
	defer unlock()
	last, err := t.lastSeq()
	if err != nil {
		return 0, err
	}
	e.Seq = last + 1
	// What an agent or a tool writes to the timeline keeps no credential.
	line, err := redact.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("encode timeline entry: %w", err)
	}
	if err := t.Door.AppendLog(TimelinePath, append(line, '\n'), ndjson.RotateAt(t.MaxBytes, DefaultTimelineMaxBytes)); err != nil {
		return 0, err
	}
	return e.Seq, nil
}

// lastSeq returns the seq of the last complete entry (0 for a new
// timeline). A live file that is missing or empty was just rotated (or
// never written): the newest rotated file then holds the last entry.
func (t Timeline) lastSeq() (int64, error) {
	seq, state, err := t.lastSeqOf(TimelinePath)
	if state != noEntries || err != nil {
		return seq, err
	}
	segs, err := t.Door.Segments(TimelinePath)
	if err != nil {
		return 0, err
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].Live() {
			continue
		}
		seq, state, err := t.lastSeqOf(segs[i].Path)
		if state != noEntries || err != nil {
			return seq, err
		}
	}
	return 0, nil
}

type tailState int

const (
	found     tailState = iota
	noEntries           // missing or blank file
)

// lastSeqOf reads the end of one timeline file, in growing windows, and
// the whole file only when its last entries are larger than tailWindow. A
// file that has content but no readable entry is an error: its seq cannot
// be continued.
func (t Timeline) lastSeqOf(rel string) (int64, tailState, error) {
	for _, window := range []int64{firstWindow, tailWindow, math.MaxInt64} {
		b, err := t.Door.ReadTail(rel, window)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, noEntries, nil
		}
		if err != nil {
			return 0, found, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return 0, noEntries, nil
		}
		if seq, ok := lastSeqIn(b); ok {
			return seq, found, nil
		}
		if int64(len(b)) < window {
			break
		}
	}
	return 0, found, &fault.CorruptFile{Path: rel, Format: "NDJSON"}
}

// lastSeqIn finds the seq of the last parseable line of b, walking back
// from the end line by line (the last line is nearly always the one).
func lastSeqIn(b []byte) (int64, bool) {
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
