package procs

import (
	"errors"
	"os"
)

// ErrNoProcess is returned when the system has no process of a pid.
var ErrNoProcess = errors.New("no such process")

// Stat is what toolhost reads of a process from the system's process table
// (ReadStat: /proc/<pid>/stat on Linux, the kern.proc sysctl on macOS).
type Stat struct {
	PID   int
	State byte
	PPID  int
	PGID  int
	// StartTicks is the start time in the system's own unit (Linux: clock
	// ticks since boot; macOS: microseconds since the epoch); together with
	// the pid it names one process for its whole life on this boot.
	StartTicks uint64
}

// Dead reports whether the process has exited (zombie or dead entry).
func (s Stat) Dead() bool { return s.State == 'Z' || s.State == 'X' }

// Self is this process, by pid and start time.
func Self() (Process, error) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		return Process{}, err
	}
	return Process{PID: st.PID, StartTicks: st.StartTicks}, nil
}

// Alive reports whether the process pid that started at startTicks is still
// running (not a zombie). A pid reused by another process is not alive.
func Alive(pid int, startTicks uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := ReadStat(pid)
	return err == nil && !st.Dead() && st.StartTicks == startTicks
}
