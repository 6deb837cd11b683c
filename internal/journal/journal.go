package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/internal/ctxinject"
)

// Paths of the shared logs, relative to the project dir.
const (
	EventsPath   = ".toolhost/events.ndjson"
	TimelinePath = "timeline.ndjson"
	seqPath      = ".toolhost/timeline.seq"
)

// ServiceAllowList is the allow-list of the services' sandbox: the shared
// logs, toolhost's own state and the bug tracker.
var ServiceAllowList = []string{TimelinePath, ".toolhost/**", "bugs/**"}

// Door is the part of the sandbox the journal needs.
type Door interface {
	AppendFile(rel string, data []byte) error
	ReadFile(rel string) ([]byte, error)
	WriteFile(rel string, data []byte) error
	Lock(name string) (func(), error)
}

// Events appends events as NDJSON lines.
type Events struct{ Door Door }

// Emit implements ctxinject.Events.
func (e Events) Emit(ev ctxinject.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", ev.Kind, err)
	}
	return e.Door.AppendFile(EventsPath, append(b, '\n'))
}

// Timeline appends timeline entries with a cross-process sequence number.
type Timeline struct{ Door Door }

// Append implements ctxinject.Timeline. The sequence counter is advanced
// before the line is written, so a crash in between leaves a gap, never a
// repeated seq.
func (t Timeline) Append(e ctxinject.TimelineEntry) (int64, error) {
	unlock, err := t.Door.Lock("timeline")
	if err != nil {
		return 0, err
	}
	defer unlock()
	var last int64
	b, err := t.Door.ReadFile(seqPath)
	switch {
	case err == nil:
		last, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is corrupt: %w", seqPath, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	e.Seq = last + 1
	line, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("encode timeline entry: %w", err)
	}
	if err := t.Door.WriteFile(seqPath, []byte(strconv.FormatInt(e.Seq, 10)+"\n")); err != nil {
		return 0, err
	}
	if err := t.Door.AppendFile(TimelinePath, append(line, '\n')); err != nil {
		return 0, err
	}
	return e.Seq, nil
}
