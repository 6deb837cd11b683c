package procs

import (
	"strings"

	"golang.org/x/sys/unix"
)

// ReadStat reads the process's entry of the kern.proc.pid sysctl (macOS
// has no /proc).
func ReadStat(pid int) (Stat, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pid", pid)
	if err != nil {
		return Stat{}, err
	}
	if len(procs) == 0 {
		return Stat{}, ErrNoProcess
	}
	return statOf(&procs[0]), nil
}

// statOf reads one kinfo_proc; the start time is kept in microseconds.
func statOf(k *unix.KinfoProc) Stat {
	t := k.Proc.P_starttime
	return Stat{
		PID: int(k.Proc.P_pid), State: stateLetter(k.Proc.P_stat), PPID: int(k.Eproc.Ppid), PGID: int(k.Eproc.Pgid),
		StartTicks: uint64(t.Sec)*1_000_000 + uint64(t.Usec),
	}
}

// stateLetter names a p_stat (sys/proc.h: SIDL 1, SRUN 2, SSLEEP 3,
// SSTOP 4, SZOMB 5) by the letter Linux uses for it.
func stateLetter(s int8) byte {
	if s >= 1 && int(s) <= len("RRSTZ") {
		return "RRSTZ"[s-1]
	}
	return '?'
}

// GroupMembers returns the pids of the live (non-zombie) processes whose
// process group is pgid (the kern.proc.pgrp sysctl).
func GroupMembers(pgid int) ([]int, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return nil, err
	}
	var pids []int
	for i := range procs {
		if st := statOf(&procs[i]); !st.Dead() {
			pids = append(pids, st.PID)
		}
	}
	return pids, nil
}

// BootID is this boot of this machine (the kern.bootsessionuuid sysctl),
// "" when unknown: a pid and its start time name a process only together
// with it, so a process announced by another machine (or before a
// reboot) is never looked up here.
func BootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(id)
}
