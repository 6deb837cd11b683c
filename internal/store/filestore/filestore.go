package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
)

// Access says what a Store may write.
type Access int

const (
	// ReadWrite writes every store (a session, approve, import).
	ReadWrite Access = iota
	// DecisionsOnly writes the confirmations alone: a human's decision is
	// the one thing a live view (the dashboard) writes, and its door
	// cannot write anything else.
	DecisionsOnly
	// ReadOnly writes nothing (audit, export).
	ReadOnly
)

// Options configure a file store.
type Options struct {
	// ProjectID names the project in the audit chain's start record.
	ProjectID string
	Access    Access
	// Limits are the sizes at which the logs rotate: 0 the default, a
	// negative value never.
	AuditMaxBytes, EventsMaxBytes, TimelineMaxBytes int64
	// Clock stamps the confirmations and request states (time.Now in UTC
	// when nil).
	Clock confirm.Clock
	// Poll is how often Watch and the followers look at the files
	// (default 250ms).
	Poll time.Duration
	// WrapDoor, when set, is what every write goes through instead of the
	// store's sandbox door itself (a test plants failures there).
	WrapDoor func(*sandbox.Sandbox) Door
}

// Door is what the file store writes through: the union of what each
// store's file code needs of the sandbox door.
type Door interface {
	journal.Door
	audit.Door
	bugs.Door
	confirm.Door
}

// AllowList is the file store's door: the shared logs, toolhost's own
// .toolhost/, the bug tracker and the agents' states.
func AllowList() []string {
	return append(append([]string{}, journal.ServiceAllowList...), store.AgentStateDir+"/**")
}

// Store is a project dir's files as a store.Store.
type Store struct {
	dir  string
	o    Options
	sb   *sandbox.Sandbox
	door Door
	root *os.Root

	timeline *timelineLog
	events   *eventsLog
	audit    *auditTrail
	bugs     *bugStore
	agents   *agentState
	confirms *confirmations
	states   *requestStates

	closeOnce sync.Once
	closeErr  error
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// Open opens the store of the project dir dir, which must exist.
func Open(dir string, o Options) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("project dir %s is not a directory", dir)
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	var allow []string
	switch o.Access {
	case ReadWrite:
		allow = AllowList()
	case DecisionsOnly:
		allow = []string{confirm.Path}
	}
	door, err := sandbox.New(abs, "toolhost", allow)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		door.Close()
		return nil, err
	}
	s := &Store{dir: abs, o: o, sb: door, door: door, root: root}
	if o.WrapDoor != nil {
		s.door = o.WrapDoor(door)
	}
	s.timeline = &timelineLog{s: s, w: journal.Timeline{Door: s.door, MaxBytes: o.TimelineMaxBytes}}
	s.events = &eventsLog{s: s, w: journal.Events{Door: s.door, MaxBytes: o.EventsMaxBytes}}
	s.audit = &auditTrail{s: s}
	s.bugs = &bugStore{s: s, w: &bugs.Store{Door: s.door}}
	s.agents = &agentState{s: s}
	s.confirms = &confirmations{w: &confirm.Store{Door: s.door, Clock: o.Clock}}
	s.states = &requestStates{door: s.door}
	return s, nil
}

// Dir is the project dir.
func (s *Store) Dir() string { return s.dir }

// Door is the store's door (the services' door of a session: it writes
// exactly the store's files).
func (s *Store) Door() *sandbox.Sandbox { return s.sb }

// Repair cuts a torn last line of the events or the timeline (a writer
// killed inside its write), as a session does at start, and returns how
// many bytes it cut.
func (s *Store) Repair() (int64, error) { return journal.Repair(s.door) }

func (s *Store) Timeline() store.Timeline           { return s.timeline }
func (s *Store) Events() store.Events               { return s.events }
func (s *Store) Audit() store.Audit                 { return s.audit }
func (s *Store) Bugs() store.Bugs                   { return s.bugs }
func (s *Store) Agents() store.AgentState           { return s.agents }
func (s *Store) Confirmations() store.Confirmations { return s.confirms }
func (s *Store) RequestStates() confirm.StateStore  { return s.states }
func (s *Store) Describe() string                   { return "files in " + s.dir }

// Close flushes the audit trail and releases the files; safe to call
// twice.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.audit.close()
		s.sb.Close()
		s.root.Close()
	})
	return s.closeErr
}

// Watch polls the stamps (inode, size, mtime) of the agents' state files,
// the bug index and the confirmations, and reports each that changed.
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) error {
	seen := map[string]stamp{}
	look := func(first bool) {
		for _, w := range s.watched() {
			st := s.stampOf(w.rel)
			old, ok := seen[w.rel]
			seen[w.rel] = st
			if !first && (!ok || old != st) {
				fn(w.change)
			}
		}
	}
	look(true)
	t := time.NewTicker(s.o.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			look(false)
		}
	}
}

type watched struct {
	rel    string
	change store.Change
}

// watched lists the files whose change Watch reports: every agent state
// file present (new ones appear as the directory changes), the bug index
// and directory, and the confirmations.
func (s *Store) watched() []watched {
	out := []watched{
		{bugs.IndexPath, store.Change{What: store.ChangedBugs}},
		{bugs.Dir, store.Change{What: store.ChangedBugs}},
		{confirm.Path, store.Change{What: store.ChangedConfirmations}},
	}
	names, _ := s.agentFiles()
	for _, n := range names {
		if agent, ok := agentOfFile(n); ok {
			out = append(out, watched{store.AgentStateDir + "/" + n, store.Change{What: store.ChangedAgent, Agent: agent}})
		}
	}
	return out
}

// stamp tells whether a file changed since it was last looked at.
type stamp struct {
	ino   uint64
	size  int64
	mtime time.Time
	gone  bool
}

func (s *Store) stampOf(rel string) stamp {
	fi, err := s.root.Stat(rel)
	if err != nil {
		return stamp{gone: true}
	}
	st := stamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// agentFiles lists the names in agent-state/.
func (s *Store) agentFiles() ([]string, error) {
	d, err := s.root.Open(store.AgentStateDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// agentOfFile returns the agent of a state file name (pm-todo.json → pm).
func agentOfFile(name string) (string, bool) {
	for _, suffix := range []string{"-todo.json", "-runtime.json"} {
		if a, ok := strings.CutSuffix(name, suffix); ok && a != "" {
			return a, true
		}
	}
	return "", false
}
