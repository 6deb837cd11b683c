package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrNoProcess is returned when /proc has no entry for a pid.
var ErrNoProcess = errors.New("no such process")

// Stat is what toolhost reads of /proc/<pid>/stat.
type Stat struct {
	PID   int
	State byte
	PPID  int
	PGID  int
	// StartTicks is the start time in clock ticks since boot; together with
	// the pid it names one process for its whole life.
	StartTicks uint64
}

// Dead reports whether the process has exited (zombie or dead entry).
func (s Stat) Dead() bool { return s.State == 'Z' || s.State == 'X' }

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Stat{}, ErrNoProcess
		}
		return Stat{}, err
	}
	return parseStat(pid, b)
}

// parseStat parses a stat line; the command name (field 2) may hold spaces
// and parentheses, so fields are counted from the last ')'.
func parseStat(pid int, b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: ppid: %w", pid, err)
	}
	pgid, err := strconv.Atoi(f[2])
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: pgrp: %w", pid, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: starttime: %w", pid, err)
	}
	return Stat{PID: pid, State: f[0][0], PPID: ppid, PGID: pgid, StartTicks: start}, nil
}

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

// GroupMembers returns the pids of the live (non-zombie) processes whose
// process group is pgid.
func GroupMembers(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := ReadStat(pid)
		if err != nil || st.Dead() || st.PGID != pgid {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
