package procs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Spec is a child process to start.
type Spec struct {
	// Name says what the child is, for logs and errors ("bash",
	// "unit todo-be", "upstream github").
	Name string
	// Argv is the command; Argv[0] is a path (absolute or relative to Dir)
	// unless Path is set.
	Argv []string
	// Program is what the command runs, for reports (spans, logs): the
	// held command's program when Argv starts a holder in front of it
	// (internal/confine); Argv[0] when empty.
	Program string
	// Path is the program to run when Argv[0] is only its name (as a shell
	// would pass it: bash sees "bash" in $0, not /usr/bin/bash).
	Path string
	// Dir is the working directory ("" keeps toolhost's).
	Dir string
	// Env is the complete environment of the child.
	Env []string
	// Stdin, Stdout and Stderr are handed to the child as they are (nil:
	// /dev/null). The caller closes its copies after Spawn.
	Stdin, Stdout, Stderr *os.File
	// ExtraFiles are handed to the child as descriptors 3, 4 … (a pipe
	// back to its parent); the caller closes its copies after Spawn.
	ExtraFiles []*os.File
	// Confine runs on the OS thread that forks the child, right before the
	// fork, so the child starts inside whatever it restricts (a Landlock
	// ruleset: confine.Plan.Restrict). That thread is never given back to
	// the Go runtime: it ends when the child's leader has exited.
	Confine func() error
	// Detached children are not tied to toolhost's life: no parent-death
	// signal, and the warden does not stop them when toolhost dies.
	Detached bool
	// KeepGroup leaves the processes the leader started running when the
	// leader exits (a unit whose launcher hands over to a server); they are
	// stopped with the group later. Otherwise they are stopped as soon as
	// the leader exits.
	KeepGroup bool
	// InGroup leaves the child in this process's session and process group
	// instead of its own: a holder's command (internal/confine), so that
	// whoever stops the holder's group stops the command with it. The
	// caller stops such a child itself (Stop and Group are a leader's).
	InGroup bool
	// Grace is how long the group has between SIGTERM and SIGKILL when it
	// is stopped (DefaultGrace if 0).
	Grace time.Duration
}

// Child is a started process: the leader of its own session and process
// group.
type Child struct {
	Name       string
	PID        int
	PGID       int
	StartTicks uint64
	StartedAt  time.Time
	Detached   bool

	cmd       *exec.Cmd
	grace     time.Duration
	keepGroup bool
	// exited is closed when the leader has exited (still unreaped).
	exited chan struct{}
	// done is closed when the leader has been reaped and, unless
	// KeepGroup, what it left in its group has been stopped.
	done chan struct{}

	mu       sync.Mutex
	exitCode int
	signal   string
	sig      syscall.Signal
	waitErr  error
}

// Spawn starts a child as the leader of its own session (so of its own
// process group), from an OS thread locked for the child's lifetime.
// Without Detached, on Linux, the child gets SIGKILL when that thread dies,
// which is only after the leader exited or when toolhost itself dies (even
// by SIGKILL); macOS has no such signal (child_darwin.go).
//
// Its own session means no controlling terminal: whatever terminal toolhost
// was started from, a child cannot open /dev/tty, is not sent the
// terminal's signals, and cannot push input into it (TIOCSTI on a terminal
// that is not one's own needs CAP_SYS_ADMIN, which a confined command does
// not hold). It gets exactly Stdin, Stdout and Stderr as descriptors 0-2,
// its ExtraFiles after them, and nothing else (fds.go).
func Spawn(spec Spec) (*Child, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("empty argv")
	}
	attr := sysProcAttr(spec.Detached, spec.InGroup)
	path := spec.Path
	if path == "" {
		path = spec.Argv[0]
	}
	cmd := &exec.Cmd{
		Path: path, Args: spec.Argv, Dir: spec.Dir, Env: spec.Env,
		SysProcAttr: attr, ExtraFiles: spec.ExtraFiles,
	}
	// exec.Cmd opens /dev/null itself for nil streams, on the forking
	// thread; a confined thread may not be allowed to, so they are opened
	// here.
	var null *os.File
	stream := func(f *os.File) (*os.File, error) {
		if f != nil {
			return f, nil
		}
		if null == nil {
			var err error
			if null, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
				return nil, err
			}
		}
		return null, nil
	}
	var err error
	if cmd.Stdin, err = stream(spec.Stdin); err == nil {
		if cmd.Stdout, err = stream(spec.Stdout); err == nil {
			cmd.Stderr, err = stream(spec.Stderr)
		}
	}
	if null != nil {
		defer null.Close()
	}
	if err != nil {
		return nil, err
	}
	grace := spec.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	c := &Child{
		Name: spec.Name, Detached: spec.Detached, cmd: cmd, grace: grace, keepGroup: spec.KeepGroup,
		exited: make(chan struct{}), done: make(chan struct{}),
	}
	started := make(chan error, 1)
	go c.keep(spec.Confine, started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	c.PID, c.PGID, c.StartedAt = cmd.Process.Pid, cmd.Process.Pid, time.Now().UTC()
	if spec.InGroup {
		c.PGID = syscall.Getpgrp()
	}
	// The leader is not reaped before Wait, so its stat entry is there even
	// if it already exited.
	if st, err := ReadStat(c.PID); err == nil {
		c.StartTicks = st.StartTicks
	}
	go c.reap()
	return c, nil
}

// keep forks the child from a locked OS thread and stays on it until the
// leader has exited: the parent-death signal fires when the forking thread
// ends, and a thread that called Confine must never run anything else.
func (c *Child) keep(restrict func() error, started chan<- error) {
	runtime.LockOSThread()
	if onMainThread() {
		// The main thread stands for the whole process towards the kernel
		// (a confined command's signal to toolhost is checked against it),
		// so it is never confined. While this goroutine holds it, the
		// nested one runs on another thread.
		nested := make(chan struct{})
		go func() { c.keep(restrict, started); close(nested) }()
		<-nested
		runtime.UnlockOSThread()
		return
	}
	// Never unlocked: the runtime ends this thread with the goroutine.
	if restrict != nil {
		// This thread stays alive, in the child's Landlock domain, for
		// as long as the child runs (its parent-death signal is tied to
		// it), and Landlock lets a process trace its own domain: the
		// child could stop this thread and write this process's memory,
		// where the other threads hold more authority than the child.
		// A process that is not dumpable cannot be traced, or its
		// memory opened, by one without CAP_SYS_PTRACE, which no
		// confined process holds.
		if err := notDumpable(); err != nil {
			started <- fmt.Errorf("confine: %w", err)
			return
		}
		if err := restrict(); err != nil {
			started <- fmt.Errorf("confine: %w", err)
			return
		}
	}
	if err := c.cmd.Start(); err != nil {
		started <- err
		return
	}
	started <- nil
	waitExited(c.cmd.Process.Pid)
	close(c.exited)
}

// reap handles the leader's exit: the rest of its group first (unless
// KeepGroup), while the unreaped leader still reserves the group id, then
// the leader itself.
func (c *Child) reap() {
	<-c.exited
	if !c.keepGroup {
		// SIGTERM reaches whatever the leader left in its group; only if
		// something is left does the stop wait for it (after the reap the
		// group id is free once the group is empty, so the check is made
		// with signal 0, which harms no one).
		_ = syscall.Kill(-c.PGID, syscall.SIGTERM)
	}
	err := c.cmd.Wait()
	code, name, sig := -1, "", syscall.Signal(0)
	if st := c.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal()
			name = SignalName(sig)
		} else {
			code = st.ExitCode()
		}
		err = nil
	}
	c.mu.Lock()
	c.exitCode, c.signal, c.sig, c.waitErr = code, name, sig, err
	c.mu.Unlock()
	if !c.keepGroup && syscall.Kill(-c.PGID, 0) == nil {
		_, _ = StopGroup(context.Background(), c.Group(), c.grace)
	}
	close(c.done)
}

// SignalName names a signal the way toolhost reports it ("SIGTERM").
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return s.String()
}

// Done is closed when the leader has been reaped (and, unless KeepGroup,
// the rest of its group stopped).
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited is closed as soon as the leader has exited.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Exit is the leader's exit code (-1 when a signal ended it) and the
// signal's name; valid once Done is closed.
func (c *Child) Exit() (code int, signal string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitCode, c.signal, c.waitErr
}

// ExitSignal is the signal that ended the leader (0: it exited by
// itself); valid once Done is closed.
func (c *Child) ExitSignal() syscall.Signal {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sig
}

// Group is the child's process group.
func (c *Child) Group() Group {
	return Group{PGID: c.PGID, LeaderPID: c.PID, LeaderTicks: c.StartTicks}
}

// Stop stops the child's whole process group (SIGTERM, its grace, SIGKILL)
// and waits until the leader has been reaped. Cancelling ctx only shortens
// the grace. Safe to call more than once and after the child exited.
func (c *Child) Stop(ctx context.Context) (StopReport, error) {
	rep, err := StopGroup(ctx, c.Group(), c.grace)
	if err != nil {
		return rep, err
	}
	return rep, awaitStopped(ctx, c.done, c.Name, c.PID)
}

// awaitStopped waits for the bookkeeping of a stopped leader (done): the
// group is empty by now, so the reap follows, but a unit's bookkeeping
// writes its record durably, which on a busy disk takes seconds. The wait
// ends with the caller's context, or after reapWait without one.
func awaitStopped(ctx context.Context, done <-chan struct{}, name string, pid int) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: leader %d stopped, its bookkeeping unfinished: %w", name, pid, context.Cause(ctx))
	case <-time.After(reapWait):
		return fmt.Errorf("%s: leader %d not reaped %s after stop", name, pid, reapWait)
	}
}

// Pipes are the parent's ends of a child's standard streams.
type Pipes struct {
	Stdin          *os.File // the write end of the child's stdin
	Stdout, Stderr *os.File // the read ends of its stdout and stderr
}

// SpawnPiped starts spec through spawn (Spawn, or an Owner's Spawn) with a
// new pipe on each standard stream and returns the parent's ends.
func SpawnPiped(spawn func(Spec) (*Child, error), spec Spec) (*Child, Pipes, error) {
	var fds [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	closeAll := func() {
		for _, f := range fds {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := 0; i < len(fds); i += 2 {
		var err error
		if fds[i], fds[i+1], err = os.Pipe(); err != nil {
			closeAll()
			return nil, Pipes{}, err
		}
	}
	spec.Stdin, spec.Stdout, spec.Stderr = fds[0], fds[3], fds[5]
	c, err := spawn(spec)
	if err != nil {
		closeAll()
		return nil, Pipes{}, err
	}
	fds[0].Close()
	fds[3].Close()
	fds[5].Close()
	return c, Pipes{Stdin: fds[1], Stdout: fds[2], Stderr: fds[4]}, nil
}
