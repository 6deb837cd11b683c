package testutil

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store/filestore"
)

// FakeEpoch is where a default FakeClock starts.
var FakeEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// FakeClock is a callctx.Clock for tests: each reading first moves it by
// its step (zero: it stands still), so timestamps are predictable. It is
// safe for concurrent use.
type FakeClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// NewFakeClock returns a clock at start that moves step per reading.
func NewFakeClock(start time.Time, step time.Duration) *FakeClock {
	return &FakeClock{now: start, step: step}
}

// Now moves the clock by its step and returns the new time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// Add moves the clock by d.
func (c *FakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set puts the clock at t; the next reading is t plus the step.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// CtxOptions describe the in-process call context NewCtx builds. Only Agent
// is required.
type CtxOptions struct {
	// Agent is the agent's short or template name in the embedded
	// configs/agents.json (coder, devloop-coder, …).
	Agent string
	// AllowList is the agent door's write allow-list; nil means the agent's
	// writeAllowList in configs/agents.json.
	AllowList []string
	// Unit is the session's unit id (Identity.UnitID), if any.
	Unit string
	// Dir is the project dir; "" means a new t.TempDir(). Several contexts
	// on one Dir act like several sessions on one project.
	Dir string
	// SessionID and CallID default to "sess-test" and "call-test".
	SessionID, CallID string
	// Clock defaults to a FakeClock at FakeEpoch moving one second per
	// reading.
	Clock callctx.Clock
	// Cwd, when set, is the agent's working directory relative to the
	// project dir (Settings.Cwd is then absolute).
	Cwd string
	// EnvAllowList becomes Settings.EnvAllowList.
	EnvAllowList []string
	// Events and Timeline replace the journal on the shared door (e.g. an
	// in-memory recorder).
	Events   callctx.Events
	Timeline callctx.Timeline
	// Procs owns the context's child processes; nil means a new manager
	// that is closed when the test ends. Progress is handed over as it is.
	Procs    procs.Owner
	Progress callctx.ProgressFunc
}

// NewCtx builds the *callctx.Ctx of one tool call the way a session does:
// the agent's real sandbox door, the project's file store (timeline,
// events, bugs, agent state) with its door as the services' door, a fake
// clock and a silent logger. Everything is closed when the test ends.
func NewCtx(t testing.TB, o CtxOptions) *callctx.Ctx {
	t.Helper()
	set, err := agents.Load("")
	if err != nil {
		t.Fatal(err)
	}
	ag, err := set.Find(o.Agent)
	if err != nil {
		t.Fatal(err)
	}
	allow := o.AllowList
	if allow == nil {
		allow = ag.Sandbox.WriteAllowList
	}
	dir := o.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	files, err := sandbox.New(dir, ag.Name, allow)
	if err != nil {
		t.Fatal(err)
	}
	st, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		_ = files.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = files.Close(); _ = st.Close() })

	svc := callctx.Services{
		Files: files, Shared: st.Door(), Timeline: st.Timeline(), Events: st.Events(),
		Clock: o.Clock, Log: zerolog.Nop(), Procs: o.Procs, Bugs: st.Bugs(), Agents: st.Agents(),
	}
	if svc.Clock == nil {
		svc.Clock = NewFakeClock(FakeEpoch, time.Second)
	}
	if svc.Procs == nil {
		m := procs.NewManager(procs.Options{})
		t.Cleanup(func() { _ = m.Close() })
		svc.Procs = m
	}
	if o.Events != nil {
		svc.Events = o.Events
	}
	if o.Timeline != nil {
		svc.Timeline = o.Timeline
	}
	sb := ag.Sandbox
	sb.WriteAllowList = allow
	settings := callctx.Settings{WriteAllowList: allow, EnvAllowList: o.EnvAllowList, Sandbox: sb}
	if o.Cwd != "" {
		settings.Cwd = filepath.Join(files.ProjectDir(), o.Cwd)
	}
	id := callctx.Identity{Agent: ag.Short, AgentName: ag.Name, UnitID: o.Unit, SessionID: orDefault(o.SessionID, "sess-test"), ProjectDir: files.ProjectDir()}
	c, err := callctx.New(id, svc, settings, callctx.Meta{CallID: orDefault(o.CallID, "call-test")}, o.Progress)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
