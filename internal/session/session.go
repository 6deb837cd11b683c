package session

import (
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/ctxinject"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/server"
	"github.com/toolhost/toolhost/internal/tools/all"
)

// Options are the launch flags of a session.
type Options struct {
	Identity   ctxinject.Identity
	AgentsFile string
	PolicyFile string
	PageSize   int
	Version    string
	Log        zerolog.Logger
	// Registry overrides the built-in tool set (tests).
	Registry *registry.Registry
}

// Session is one wired agent session.
type Session struct {
	Agent   *agents.Agent
	Agents  *agents.Set
	Policy  *policy.Policy
	Engine  *engine.Engine
	Server  *server.Server
	Files   *sandbox.Sandbox
	Shared  *sandbox.Sandbox
	closers []func() error
}

// UsageError is a launch problem the CLI reports with exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Open wires a session.
func Open(o Options) (*Session, error) {
	set, err := agents.Load(o.AgentsFile)
	if err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	id := o.Identity
	if id.Agent == "" {
		return nil, &UsageError{Msg: fmt.Sprintf("--agent is required (known: %v)", set.Names())}
	}
	ag, err := set.Find(id.Agent)
	if err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	id.Agent, id.AgentName = ag.Short, ag.Name
	if id.ProjectDir == "" {
		return nil, &UsageError{Msg: "--project-dir is required (or TOOLHOST_PROJECT_DIR)"}
	}
	if id.UnitID != "" && !ctxinject.ValidUnit(id.UnitID) {
		return nil, &UsageError{Msg: fmt.Sprintf("--unit %q: must be 1-64 letters, digits, '-', '_' or '.'", id.UnitID)}
	}
	abs, err := filepath.Abs(id.ProjectDir)
	if err != nil {
		return nil, err
	}
	id.ProjectDir = abs
	if id.SessionID == "" {
		id.SessionID = "sess-" + ctxinject.NewCallID()
	}
	files, err := sandbox.New(abs, ag.Name, ag.Sandbox.WriteAllowList)
	if err != nil {
		return nil, fmt.Errorf("project dir not usable: %w", err)
	}
	shared, err := files.With("toolhost", journal.ServiceAllowList)
	if err != nil {
		return nil, err
	}
	// Fail at start with a clear message when the project dir is read-only,
	// instead of failing every call later.
	if err := shared.WriteFile(".toolhost/session.probe", []byte(id.SessionID+"\n")); err != nil {
		return nil, fmt.Errorf("project dir %s is not writable: %w", abs, err)
	}
	_ = shared.Remove(".toolhost/session.probe")
	pol := policy.Load(o.PolicyFile, o.Log)
	reg := o.Registry
	if reg == nil {
		reg = all.Registry()
	}
	svc := ctxinject.Services{
		Files:    files,
		Shared:   shared,
		Timeline: journal.Timeline{Door: shared},
		Events:   journal.Events{Door: shared},
		Clock:    ctxinject.SystemClock{},
		Log:      o.Log,
	}
	settings := ctxinject.Settings{
		Cwd:            filepath.Join(abs, filepath.FromSlash(ag.Cwd(id.Company, id.PID, id.UnitID))),
		WriteAllowList: ag.Sandbox.WriteAllowList,
		EnvAllowList:   pol.Current().EnvAllowList,
	}
	eng := &engine.Engine{
		Registry: reg, Agent: ag, Policy: pol, Audit: audit.FileSink{Door: shared},
		Identity: id, Services: svc, Settings: settings, Log: o.Log,
		Guard: bashguard.Check,
	}
	eng.Init()
	srv := &server.Server{Engine: eng, Name: "toolhost", Version: o.Version, PageSize: o.PageSize, Log: o.Log}
	srv.Visible = func(name string) bool {
		e, ok := reg.Lookup(name)
		return ok && ag.Allows(name) && pol.Current().Decide(e.Spec).Allowed()
	}
	s := &Session{Agent: ag, Agents: set, Policy: pol, Engine: eng, Server: srv, Files: files, Shared: shared}
	s.closers = append(s.closers, files.Close, shared.Close)
	return s, nil
}

// Close releases the session's resources.
func (s *Session) Close() error {
	var first error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}
