package procs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Owner is what a tool sees of the session's process owner (callctx
// Services.Procs): start, find and stop the units this session started.
type Owner interface {
	// Start launches a unit; it fails if this owner already runs the unit.
	Start(spec Spec) (*Proc, error)
	// Get returns the unit this owner started last, running or exited.
	Get(unit string) (*Proc, bool)
	// Stop stops the unit's whole process group and waits until its exit
	// has been handled (OnExit returned).
	Stop(ctx context.Context, unit string) (StopReport, error)
	// OwnerPID is the pid of the process that owns the units (toolhost).
	OwnerPID() int
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

// Spec is a unit to start.
type Spec struct {
	Unit string
	// Argv is the command; Argv[0] is a path (absolute or relative to Dir).
	Argv []string
	// Dir is the absolute working directory.
	Dir string
	// Env is the complete environment of the child.
	Env            []string
	Stdout, Stderr Log
	// OnExit runs once after the leader has been reaped, before Done is
	// closed; Stopped tells a requested stop from an exit of its own.
	OnExit func(p *Proc)
}

// DefaultGrace is how long a unit's process group has between SIGTERM and
// SIGKILL, on a requested stop and when the session closes.
const DefaultGrace = 3 * time.Second

// Options configure a Manager.
type Options struct {
	// Grace is how long a group has between SIGTERM and SIGKILL
	// (DefaultGrace if 0).
	Grace time.Duration
	// RotateEvery is how often log sizes are checked (1 s if 0).
	RotateEvery time.Duration
	Log         zerolog.Logger
}

// Manager owns the units one session started. Close stops them all.
type Manager struct {
	opts   Options
	mu     sync.Mutex
	procs  map[string]*Proc
	closed bool
}

// NewManager returns an empty manager.
func NewManager(o Options) *Manager {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.RotateEvery <= 0 {
		o.RotateEvery = time.Second
	}
	return &Manager{opts: o, procs: map[string]*Proc{}}
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("process owner is closed")

// Proc is a started unit.
type Proc struct {
	Unit       string
	PID        int
	PGID       int
	StartTicks uint64
	StartedAt  time.Time
	Argv       []string
	Dir        string

	cmd  *exec.Cmd
	spec Spec
	done chan struct{}

	mu       sync.Mutex
	exited   bool
	exitCode int
	signal   string
	stopped  bool
}

// Done is closed when the leader has exited and OnExit has returned.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Group is the unit's process group.
func (p *Proc) Group() Group {
	return Group{PGID: p.PGID, LeaderPID: p.PID, LeaderTicks: p.StartTicks}
}

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

// OwnerPID implements Owner.
func (m *Manager) OwnerPID() int { return os.Getpid() }

// Start implements Owner.
func (m *Manager) Start(spec Spec) (*Proc, error) {
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
	cmd := &exec.Cmd{
		Path:        spec.Argv[0],
		Args:        spec.Argv,
		Dir:         spec.Dir,
		Env:         spec.Env,
		Stdout:      spec.Stdout.File,
		Stderr:      spec.Stderr.File,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	p := &Proc{
		Unit: spec.Unit, PID: pid, PGID: pid, StartedAt: time.Now().UTC(),
		Argv: append([]string(nil), spec.Argv...), Dir: spec.Dir,
		cmd: cmd, spec: spec, done: make(chan struct{}),
	}
	// The child cannot be reaped before Wait below, so its stat entry is
	// there even if it already exited.
	if st, err := ReadStat(pid); err == nil {
		p.StartTicks = st.StartTicks
	} else {
		m.opts.Log.Warn().Err(err).Int("pid", pid).Msg("read start time of unit")
	}
	m.procs[spec.Unit] = p
	go m.watch(p)
	return p, nil
}

// watch reaps the leader, rotates the logs while it runs and finishes the
// unit's bookkeeping.
func (m *Manager) watch(p *Proc) {
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	tick := time.NewTicker(m.opts.RotateEvery)
	defer tick.Stop()
	var err error
loop:
	for {
		select {
		case err = <-waited:
			break loop
		case <-tick.C:
			for _, l := range []Log{p.spec.Stdout, p.spec.Stderr} {
				if rerr := rotate(l); rerr != nil {
					m.opts.Log.Warn().Err(rerr).Str("unit", p.Unit).Msg("rotate unit log")
				}
			}
		}
	}
	code, sig := -1, ""
	if st := p.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if sig = unix.SignalName(ws.Signal()); sig == "" {
				sig = ws.Signal().String()
			}
		} else {
			code = st.ExitCode()
		}
	} else if err != nil {
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
	rep, err := StopGroup(ctx, p.Group(), m.opts.Grace)
	if err != nil {
		return rep, err
	}
	select {
	case <-p.done:
	case <-time.After(killWait):
		return rep, fmt.Errorf("unit %s: leader %d not reaped after stop", p.Unit, p.PID)
	}
	return rep, nil
}

// Close stops every unit this manager started that still has a process in
// its group, in parallel, and waits for them. Safe to call more than once.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	procs := slices.Collect(maps.Values(m.procs))
	m.mu.Unlock()
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() {
			if !Alive(p.PID, p.StartTicks) {
				if members, _ := GroupMembers(p.PGID); len(members) == 0 {
					<-p.done
					return
				}
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
	wg.Wait()
	return errors.Join(errs...)
}
