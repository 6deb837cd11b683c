package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/progid"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/server"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/local"
	storeopen "github.com/toolhost/toolhost/internal/store/open"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/all"
	"github.com/toolhost/toolhost/internal/trace"
)

// Options are the launch flags of a session.
type Options struct {
	Identity   callctx.Identity
	AgentsFile string
	PolicyFile string
	PageSize   int
	Version    string
	Log        zerolog.Logger
	// Registry overrides the built-in tool set (tests).
	Registry *registry.Registry
	// Trace exports the session's spans and metrics (nil: nothing is
	// exported).
	Trace *trace.Provider
	// Limits are the rotation sizes of the shared logs.
	Limits Limits
	// Store is --store: the project's shared state ("" or "files": the
	// project dir's files; see internal/store/open).
	Store string
	// Announce emits session.start when the session opens and
	// session.end when it closes, with the process's pid and start time,
	// so a live view (the dashboard) knows which servers run now and sees
	// one that was killed without ending (serve sets it).
	Announce bool
}

// Limits are the sizes at which the shared logs are rotated: 0 means the
// default (audit.DefaultMaxBytes, journal.DefaultEventsMaxBytes,
// journal.DefaultTimelineMaxBytes), a negative value never rotates.
type Limits struct {
	AuditMaxBytes    int64
	EventsMaxBytes   int64
	TimelineMaxBytes int64
}

// Session is one wired agent session.
type Session struct {
	Agent  *agents.Agent
	Agents *agents.Set
	Policy *policy.Policy
	Engine *engine.Engine
	Server *server.Server
	Files  *sandbox.Sandbox
	// Shared is the door on the machine-local state in .toolhost/.
	Shared *sandbox.Sandbox
	// Store is the project's shared state.
	Store store.Store
	// upstreams holds Upstream, the session's upstream MCP servers.
	upstreams
	// Procs owns every child process of the session.
	Procs   *procs.Manager
	closers []func() error

	closeOnce sync.Once
	closeErr  error
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
	if id.UnitID != "" && !callctx.ValidUnit(id.UnitID) {
		return nil, &UsageError{Msg: fmt.Sprintf("--unit %q: must be 1-64 letters, digits, '-', '_' or '.'", id.UnitID)}
	}
	abs, err := filepath.Abs(id.ProjectDir)
	if err != nil {
		return nil, err
	}
	id.ProjectDir = abs
	// A session id chosen at launch may be one another agent of the project
	// uses; it is claimed below. A new id is unique by construction.
	chosenSession := id.SessionID != ""
	if !chosenSession {
		id.SessionID = "sess-" + callctx.NewCallID()
	}
	files, err := sandbox.New(abs, ag.Name, ag.Sandbox.WriteAllowList)
	if err != nil {
		return nil, fmt.Errorf("project dir not usable: %w", err)
	}
	shared, err := openLocal(files)
	if err != nil {
		files.Close()
		return nil, err
	}
	st, err := storeopen.Open(storeopen.Options{
		Spec: o.Store, ProjectDir: abs, ProjectID: id.ProjectID, Session: true, Log: o.Log,
		AuditMaxBytes: o.Limits.AuditMaxBytes, EventsMaxBytes: o.Limits.EventsMaxBytes, TimelineMaxBytes: o.Limits.TimelineMaxBytes,
	})
	if err != nil {
		files.Close()
		shared.Close()
		return nil, err
	}
	sink := st.Audit()
	// Opening the audit trail is also the start-up check that the store
	// takes writes: a clear message now instead of a failure on every call.
	if err := sink.Open(); err != nil {
		_ = st.Close()
		files.Close()
		shared.Close()
		return nil, fmt.Errorf("the project's store (%s) does not take writes: %w", st.Describe(), err)
	}
	if chosenSession {
		if err := st.Confirmations().Claim(context.Background(), id.SessionID, id.Agent); err != nil {
			_ = st.Close()
			files.Close()
			shared.Close()
			var taken *confirm.SessionTakenError
			if errors.As(err, &taken) {
				return nil, &UsageError{Msg: "--session: " + err.Error()}
			}
			return nil, fmt.Errorf("claiming session %s: %w", id.SessionID, err)
		}
	}
	reg := o.Registry
	if reg == nil {
		reg = all.Registry()
	}
	pol := policy.LoadWith(o.PolicyFile, o.Log, RuleOptions(reg, abs))
	// Private temp dirs of commands whose toolhost died (SIGKILL during a
	// command) are removed by whichever session starts next: sweepDelay
	// after the start (reading a busy temp dir costs milliseconds of CPU
	// that must not compete with answering initialize), or at close if the
	// session ends sooner.
	sweep := sync.OnceFunc(confine.RemoveStaleTempDirs)
	sweepTimer := time.AfterFunc(sweepDelay, sweep)
	units := procs.NewManager(procs.Options{Grace: procs.DefaultGrace, Log: o.Log, Warden: true})
	svc := callctx.Services{
		Files:    files,
		Shared:   shared,
		Timeline: st.Timeline(),
		Events:   st.Events(),
		Clock:    callctx.SystemClock{},
		Log:      o.Log,
		Procs:    units,
		Bugs:     st.Bugs(),
		Agents:   st.Agents(),
	}
	settings := callctx.Settings{
		Cwd:            filepath.Join(abs, filepath.FromSlash(ag.Cwd(id.Company, id.ProjectID, id.UnitID))),
		WriteAllowList: ag.Sandbox.WriteAllowList,
		Sandbox:        ag.Sandbox,
	}
	eng := &engine.Engine{
		Registry: reg, Agent: ag, Policy: pol, Audit: sink,
		Identity: id, Services: svc, Settings: settings, Log: o.Log,
		Confirm: st.Confirmations(),
		States:  &confirm.States{Store: st.RequestStates(), Clock: svc.Clock},
	}
	// One view of the machine for the guard and the rules: every agent's
	// write roots make the files there unknown programs.
	progs := progid.ForProject(set, abs, settings.Cwd, "")
	eng.Programs = progs
	eng.Guard = func(c tool.Command) error { return guardCommand(c, progs) }
	ts := o.Trace.Session(trace.Identity{SessionID: id.SessionID, Agent: id.Agent, ProjectID: id.ProjectID, Unit: id.UnitID})
	eng.Trace = ts
	eng.Init()
	srv := &server.Server{Engine: eng, Name: "toolhost", Version: o.Version, PageSize: o.PageSize, Log: o.Log, Trace: ts}
	s := &Session{Agent: ag, Agents: set, Policy: pol, Engine: eng, Server: srv, Files: files, Shared: shared, Store: st, Procs: units}
	srv.Visible = s.Visible
	// Closers run last-first: upstreams and units stop (units record their
	// exits through the sandbox) before the store (its audit trail) and the sandboxes
	// close; session.end is the last thing written.
	// The session's span ends last of all (the provider's flush follows).
	s.closers = append(s.closers, func() error { ts.End(); return nil }, files.Close, shared.Close, st.Close)
	if o.Announce {
		s.closers = append(s.closers, announce(svc.Events, id, o.Version, o.Log))
	}
	s.closers = append(s.closers, units.Close, func() error { sweepTimer.Stop(); sweep(); return nil }, s.removeStaleTemps(o.Log))
	s.startUpstreams(o)
	return s, nil
}

// announce emits session.start and returns the closer that emits
// session.end. A failed event is logged, never fatal: the session serves
// without its announcement.
func announce(ev callctx.Events, id callctx.Identity, version string, log zerolog.Logger) func() error {
	st, err := procs.ReadStat(os.Getpid())
	if err != nil {
		log.Warn().Err(err).Msg("cannot read this process's start time; the session is not announced")
		return func() error { return nil }
	}
	p := store.Process{PID: st.PID, StartTicks: st.StartTicks, StartedAt: time.Now().UTC(), Version: version}
	p.Host, _ = os.Hostname()
	p.Boot = procs.BootID()
	emit := func(kind string) {
		err := ev.Emit(context.Background(), store.Event{TS: time.Now().UTC(), Kind: kind, ProjectID: id.ProjectID, Agent: id.Agent,
			UnitID: id.UnitID, Session: id.SessionID, Payload: p})
		if err != nil {
			log.Warn().Err(err).Str("event", kind).Msg("cannot record the session's announcement in the events")
		}
	}
	emit(store.EventSessionStart)
	return func() error { emit(store.EventSessionEnd); return nil }
}

// openLocal moves machine-local records written before they lived in
// .toolhost/ (local.Migrate: now, before any tool of this session runs)
// and returns the door on .toolhost/, the session's machine-local state.
func openLocal(files *sandbox.Sandbox) (*sandbox.Sandbox, error) {
	mig, err := files.With("toolhost", local.MigrationAllowList())
	if err != nil {
		return nil, err
	}
	err = local.Migrate(mig)
	mig.Close()
	if err != nil {
		return nil, fmt.Errorf("move the machine-local records to .toolhost/: %w", err)
	}
	return files.With("toolhost", []string{".toolhost/**"})
}

// RuleOptions are what a policy's rules are compiled against in a
// session on project dir dir: the registry's built-in tools and Claude
// CLI's (rules.Catalog). The hook and `toolhost policy check|explain` use
// the same, so a rule compiles alike everywhere.
func RuleOptions(reg *registry.Registry, dir string) rules.Options {
	var specs []*tool.Spec
	for _, e := range reg.List() {
		specs = append(specs, e.Spec)
	}
	return rules.Options{Tools: rules.Catalog(specs), ProjectDir: dir}
}

// removeStaleTemps removes, in the background, the temp files that writes
// of a killed toolhost left in the directories this session writes to
// (sandbox.RemoveStaleTemps), and returns the closer that waits for it.
func (s *Session) removeStaleTemps(log zerolog.Logger) func() error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		now := time.Now()
		for _, door := range []*sandbox.Sandbox{s.Files, s.Shared} {
			n, err := door.RemoveStaleTemps(sandbox.StaleTempAge, now)
			if n > 0 || err != nil {
				log.Info().Str("event", "stale_temp_files_removed").Int("removed", n).AnErr("problem", err).
					Strs("allow_list", door.AllowList()).Msg("removed temp files left by writes that were killed")
			}
		}
	}()
	return func() error { <-done; return nil }
}

// Visible reports whether a tool is listed for this session: registered and
// visible to the agent under the policy in force (policy.File.Access, which
// the engine asks again for every call).
func (s *Session) Visible(name string) bool {
	e, ok := s.Engine.Registry.Lookup(name)
	return ok && s.Policy.Current().Access(s.Agent, e.Spec).Visible()
}

func (s *Session) toolsChanged() { s.Server.ToolsChanged() }

// sweepDelay is how long after the start a session removes the stale
// private temp dirs of dead commands.
const sweepDelay = 2 * time.Second

// Close releases the session's resources and stops its upstream processes.
// Safe to call twice.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		for i := len(s.closers) - 1; i >= 0; i-- {
			if err := s.closers[i](); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}

// guardCommand runs the Bash guard on a command a tool would start.
func guardCommand(c tool.Command, progs bashguard.Programs) error {
	o := bashguard.Options{Programs: progs, Dir: c.Dir}
	if c.Argv != nil {
		return bashguard.CheckArgvWith(c.Argv, c.Env, o)
	}
	return bashguard.CheckWith(c.Script, o)
}
