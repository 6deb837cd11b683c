package procs

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sysProcAttr makes the child the leader of its own session (unless
// inGroup: it stays in this process's group). macOS has no
// parent-death signal: a child outlives a toolhost killed by SIGKILL unless
// a Manager's warden stops its group (warden.go).
func sysProcAttr(_, inGroup bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: !inGroup} }

// notDumpable has nothing to do: nothing confines a child on macOS.
func notDumpable() error { return nil }

// onMainThread is false: nothing on macOS ties a thread's attributes to
// the child it forks (no Landlock domain, no parent-death signal), so any
// thread may fork.
func onMainThread() bool { return false }

// waitExited blocks until pid has exited, without reaping it, so its pid
// and process group id stay reserved until reap: a kqueue NOTE_EXIT event,
// which leaves the zombie to wait(2) (an error at registration, ESRCH,
// means it has already exited). Without a kqueue it polls the process
// table.
func waitExited(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		for {
			if st, err := ReadStat(pid); err != nil || st.Dead() {
				return
			}
			time.Sleep(pollEvery)
		}
	}
	defer unix.Close(kq)
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev[0].Fflags = unix.NOTE_EXIT
	for {
		_, err := unix.Kevent(kq, ev[:], ev[:], nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
