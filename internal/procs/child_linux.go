package procs

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr makes the child the leader of its own session (unless it is
// to stay in this process's group: inGroup) and, unless it
// is detached, gives it SIGKILL when the thread that forked it dies.
func sysProcAttr(detached, inGroup bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: !inGroup}
	if !detached {
		attr.Pdeathsig = syscall.SIGKILL
	}
	return attr
}

// notDumpable makes this process not dumpable (PR_SET_DUMPABLE 0): no
// ptrace, /proc/PID/mem, process_vm_writev or pidfd_getfd into it without
// CAP_SYS_PTRACE. A program the child execs is dumpable again.
func notDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// onMainThread reports whether the calling (locked) goroutine runs on the
// process's main thread.
func onMainThread() bool { return unix.Gettid() == unix.Getpid() }

// waitExited blocks until pid has exited, without reaping it, so its pid
// and process group id stay reserved until reap.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
