package procs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Process names one process for its whole life: pid and start time.
type Process struct {
	PID        int
	StartTicks uint64
}

// Owner is what a tool sees of the session's process owner (callctx
// Services.Procs): every child a tool starts, and the units.
type Owner interface {
	// Spawn starts a one-off child (the bash tool's command); the caller
	// waits for it and stops it.
	Spawn(spec Spec) (*Child, error)
	// Start launches a unit; it fails if this owner already runs the unit.
	Start(spec UnitSpec) (*Proc, error)
	// Get returns the unit this owner started last, running or exited.
	Get(unit string) (*Proc, bool)
	// Stop stops the unit's whole process group and waits until its exit
	// has been handled (OnExit returned).
	Stop(ctx context.Context, unit string) (StopReport, error)
	// StopGroup stops a group another process started, after confirming
	// its leader's identity.
	StopGroup(ctx context.Context, g Group, grace time.Duration) (StopReport, error)
	// Alive reports whether the process is still running (not a zombie,
	// not a reused pid).
	Alive(p Process) bool
	// GroupAlive reports whether the group's leader or any member runs.
	GroupAlive(g Group) (bool, error)
	// Self is the process that owns the children (toolhost).
	Self() Process
}

// Log is one output stream of a unit.
type Log struct {
	// File is opened for reading and appending; the child writes to it
	// directly. The manager closes it when the unit has exited.
	File *os.File
	// Cap is the size past which the log is rotated (0: never).
	Cap int64
	// Backup stores the content of a log being rotated (as <log>.1).
	Backup func(content []byte) error
}

// UnitSpec is a unit to start.
type UnitSpec struct {
	Unit string
	// Argv is the command; Argv[0] is a path (absolute or relative to Dir).
	Argv []string
	// Dir is the absolute working directory.
	Dir string
	// Env is the complete environment of the child.
	Env            []string
	Stdout, Stderr Log
	// ExtraFiles, Confine and Detached are as in Spec.
	ExtraFiles []*os.File
	Confine    func() error
	Detached   bool
	// OnExit runs once after the leader has been reaped, before Done is
	// closed; Stopped tells a requested stop from an exit of its own.
	OnExit func(p *Proc)
}

// DefaultGrace is how long a unit's process group has between SIGTERM and
// SIGKILL, on a requested stop and when the session closes.
const DefaultGrace = 3 * time.Second

// Options configure a Manager.
type Options struct {
	// Grace is how long a unit's group has between SIGTERM and SIGKILL
	// (DefaultGrace if 0).
	Grace time.Duration
	// RotateEvery is how often log sizes are checked (1 s if 0).
	RotateEvery time.Duration
	// Warden starts the warden process with the first child, so that
	// children die with toolhost even when it is killed by SIGKILL. Only
	// a binary that links this package can be its own warden (toolhost,
	// a test binary).
	Warden bool
	Log    zerolog.Logger
}

// Manager owns every child one session starts. Close stops them all.
type Manager struct {
	opts   Options
	self   Process
	warden warden

	mu       sync.Mutex
	procs    map[string]*Proc
	children map[*Child]bool
	closed   bool
}

// NewManager returns an empty manager.
func NewManager(o Options) *Manager {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.RotateEvery <= 0 {
		o.RotateEvery = time.Second
	}
	m := &Manager{opts: o, procs: map[string]*Proc{}, children: map[*Child]bool{}}
	m.self.PID = os.Getpid()
	if st, err := ReadStat(m.self.PID); err == nil {
		m.self.StartTicks = st.StartTicks
	}
	return m
}

// ErrClosed is returned by Start and Spawn after Close.
var ErrClosed = errors.New("process owner is closed")

// Self implements Owner.
func (m *Manager) Self() Process { return m.self }

// Alive implements Owner.
func (m *Manager) Alive(p Process) bool { return Alive(p.PID, p.StartTicks) }

// GroupAlive implements Owner.
func (m *Manager) GroupAlive(g Group) (bool, error) {
	if Alive(g.LeaderPID, g.LeaderTicks) {
		return true, nil
	}
	members, err := GroupMembers(g.PGID)
	return len(members) > 0, err
}

// StopGroup implements Owner.
func (m *Manager) StopGroup(ctx context.Context, g Group, grace time.Duration) (StopReport, error) {
	return StopGroup(ctx, g, grace)
}

// WardenPID is the pid of the session's warden (0 while none runs).
func (m *Manager) WardenPID() int { return m.warden.PID() }

// Spawn implements Owner: the child is tracked until it is done, stopped by
// Close, and registered with the warden unless detached.
func (m *Manager) Spawn(spec Spec) (*Child, error) {
	// Forks run in parallel; only the bookkeeping is serialised.
	c, err := Spawn(spec)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		_, _ = c.Stop(context.Background())
		return nil, ErrClosed
	}
	m.trackLocked(c)
	return c, nil
}

// trackLocked keeps c until nothing of its group is left: Close stops what
// is still running, and the warden knows its group meanwhile. m.mu is held.
func (m *Manager) trackLocked(c *Child) {
	m.children[c] = true
	if !c.Detached && m.opts.Warden {
		m.warden.add(c.Group())
	}
	if !c.keepGroup {
		go func() {
			<-c.Done()
			m.forget(c)
		}()
	}
}

// forget stops tracking c once nothing of its group is left to stop.
func (m *Manager) forget(c *Child) {
	m.mu.Lock()
	delete(m.children, c)
	m.mu.Unlock()
	if !c.Detached && m.opts.Warden {
		m.warden.remove(c.Group())
	}
}

// Proc is a started unit.
type Proc struct {
	Unit       string
	PID        int
	PGID       int
	StartTicks uint64
	StartedAt  time.Time
	Argv       []string
	Dir        string
	Detached   bool

	child *Child
	spec  UnitSpec
	done  chan struct{}

	mu       sync.Mutex
	exited   bool
	exitCode int
	signal   string
	stopped  bool
}

// Done is closed when the leader has exited and OnExit has returned.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Group is the unit's process group.
func (p *Proc) Group() Group { return p.child.Group() }

// Exit reports whether the leader exited, its exit code (-1 when killed by
// a signal) and the signal's name.
func (p *Proc) Exit() (exited bool, code int, signal string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited, p.exitCode, p.signal
}

// Stopped reports whether the unit was stopped on request (Stop or Close)
// rather than exiting by itself.
func (p *Proc) Stopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// Start implements Owner.
func (m *Manager) Start(spec UnitSpec) (*Proc, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("empty argv")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if old, ok := m.procs[spec.Unit]; ok {
		select {
		case <-old.done:
		default:
			return nil, fmt.Errorf("unit %s is already running (pid %d)", spec.Unit, old.PID)
		}
	}
	for _, l := range []Log{spec.Stdout, spec.Stderr} {
		if err := rotate(l); err != nil {
			return nil, err
		}
	}
	c, err := Spawn(Spec{
		Name: "unit " + spec.Unit, Argv: spec.Argv, Dir: spec.Dir, Env: spec.Env,
		Stdout: spec.Stdout.File, Stderr: spec.Stderr.File, ExtraFiles: spec.ExtraFiles,
		Confine: spec.Confine, Detached: spec.Detached, KeepGroup: true, Grace: m.opts.Grace,
	})
	if err != nil {
		return nil, err
	}
	p := &Proc{
		Unit: spec.Unit, PID: c.PID, PGID: c.PGID, StartTicks: c.StartTicks, StartedAt: c.StartedAt,
		Argv: append([]string(nil), spec.Argv...), Dir: spec.Dir, Detached: spec.Detached,
		child: c, spec: spec, done: make(chan struct{}),
	}
	m.procs[spec.Unit] = p
	m.trackLocked(c)
	go m.watch(p)
	return p, nil
}

// watch rotates the unit's logs while it runs and finishes its bookkeeping
// when the leader has been reaped.
func (m *Manager) watch(p *Proc) {
	tick := time.NewTicker(m.opts.RotateEvery)
	defer tick.Stop()
loop:
	for {
		select {
		case <-p.child.Done():
			break loop
		case <-tick.C:
			for _, l := range []Log{p.spec.Stdout, p.spec.Stderr} {
				if err := rotate(l); err != nil {
					m.opts.Log.Warn().Err(err).Str("unit", p.Unit).Msg("rotate unit log")
				}
			}
		}
	}
	code, sig, err := p.child.Exit()
	if err != nil {
		m.opts.Log.Warn().Err(err).Str("unit", p.Unit).Msg("wait for unit")
	}
	p.mu.Lock()
	p.exited, p.exitCode, p.signal = true, code, sig
	p.mu.Unlock()
	for _, l := range []Log{p.spec.Stdout, p.spec.Stderr} {
		if l.File != nil {
			_ = l.File.Close()
		}
	}
	if p.spec.OnExit != nil {
		p.spec.OnExit(p)
	}
	close(p.done)
}

// rotate copies a log past its cap to its backup and truncates it. The
// child keeps its append-mode descriptor, so its next write lands at the
// new end of the file; a write racing the copy may be lost, as with
// logrotate's copytruncate.
func rotate(l Log) error {
	if l.File == nil || l.Cap <= 0 || l.Backup == nil {
		return nil
	}
	fi, err := l.File.Stat()
	if err != nil || fi.Size() <= l.Cap {
		return err
	}
	buf := make([]byte, fi.Size())
	n, err := l.File.ReadAt(buf, 0)
	if err != nil && n == 0 {
		return err
	}
	if err := l.Backup(buf[:n]); err != nil {
		return err
	}
	return l.File.Truncate(0)
}

// Get implements Owner.
func (m *Manager) Get(unit string) (*Proc, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.procs[unit]
	return p, ok
}

// Stop implements Owner.
func (m *Manager) Stop(ctx context.Context, unit string) (StopReport, error) {
	p, ok := m.Get(unit)
	if !ok {
		return StopReport{}, fmt.Errorf("unit %s was not started by this session", unit)
	}
	return m.stop(ctx, p)
}

func (m *Manager) stop(ctx context.Context, p *Proc) (StopReport, error) {
	// A leader that already exited by itself keeps that verdict: the stop
	// only clears what is left of its group.
	p.mu.Lock()
	if !p.exited {
		p.stopped = true
	}
	p.mu.Unlock()
	rep, err := p.child.Stop(ctx)
	if err == nil {
		err = awaitStopped(ctx, p.done, "unit "+p.Unit, p.PID)
	}
	if err != nil {
		return rep, err
	}
	m.forget(p.child)
	return rep, nil
}

// Close stops every child this manager started that still has a process
// in its group (detached units excepted), in parallel, waits for them and
// ends the warden. Safe to call more than once.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	procs := slices.Collect(maps.Values(m.procs))
	units := map[*Child]bool{}
	for _, p := range procs {
		units[p.child] = true
	}
	var others []*Child
	for c := range m.children {
		if !units[c] && !c.Detached {
			others = append(others, c)
		}
	}
	m.mu.Unlock()
	errs := make([]error, len(procs)+len(others))
	var wg sync.WaitGroup
	for i, p := range procs {
		if p.Detached {
			continue
		}
		wg.Go(func() {
			if alive, _ := m.GroupAlive(p.Group()); !alive {
				<-p.done
				m.forget(p.child)
				return
			}
			rep, err := m.stop(context.Background(), p)
			if err != nil {
				errs[i] = fmt.Errorf("stop unit %s: %w", p.Unit, err)
				return
			}
			m.opts.Log.Info().Str("event", "unit_stopped").Str("unit", p.Unit).Int("pid", p.PID).
				Str("signal", rep.Signal).Ints("killed", rep.Killed).Msg("stopped unit at exit")
		})
	}
	for i, c := range others {
		wg.Go(func() {
			if _, err := c.Stop(context.Background()); err != nil {
				errs[len(procs)+i] = fmt.Errorf("stop %s: %w", c.Name, err)
			}
		})
	}
	wg.Wait()
	m.warden.close()
	return errors.Join(errs...)
}
