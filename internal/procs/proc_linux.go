package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

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

// BootID is this boot of this machine (/proc/sys/kernel/random/boot_id),
// "" when unknown: a pid and its start ticks name a process only together
// with it, so a process announced by another machine (or before a
// reboot) is never looked up here.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
