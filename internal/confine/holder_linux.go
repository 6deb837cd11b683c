package confine

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/procs"
)

// nest adds the holder's layers to the thread that forks the command.
func nest(layers []string) error {
	for _, l := range layers {
		switch l {
		case "scope":
			fd, err := createRuleset(&unix.LandlockRulesetAttr{Scoped: unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET})
			if err != nil {
				return fmt.Errorf("landlock_create_ruleset: %w", err)
			}
			err = restrictSelf(fd, 0)
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("landlock_restrict_self: %w", err)
			}
		case "exclude", "exclude-logged":
			// The ruleset that keeps the command off toolhost's servers'
			// ports and scopes it (Plan.exclByHolder), on descriptor 4;
			// denials after the exec logged when the plan logs its own.
			var flags uint32
			if l == "exclude-logged" {
				flags = unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
			}
			err := restrictSelf(4, flags)
			unix.Close(4)
			if err != nil {
				return fmt.Errorf("landlock_restrict_self (toolhost's servers out of reach): %w", err)
			}
		case "pin":
			prog, err := pinFilter(nativeArch())
			if err != nil {
				return err
			}
			if err := installFilter(prog); err != nil {
				return err
			}
		case "-":
		default:
			// A layer this build does not know would go missing silently.
			return fmt.Errorf("unknown holder layer %q", l)
		}
	}
	return nil
}

// pinFilter answers setsid and setpgid with success, doing nothing: a
// program that detaches itself runs on, inside its holder's group. Other
// arches' calls are left to the command's own filter (which refuses them).
func pinFilter(arch uint32) ([]unix.SockFilter, error) {
	a := &asm{labels: map[string]int{}}
	a.ld(offArch)
	a.jump(unix.BPF_JEQ, arch, "", "allow")
	a.ld(offNr)
	a.jump(unix.BPF_JEQ, unix.SYS_SETSID, "pretend", "")
	a.jump(unix.BPF_JEQ, unix.SYS_SETPGID, "pretend", "")
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
	a.label("pretend")
	a.ret(unix.SECCOMP_RET_ERRNO)
	return a.assemble()
}

// signalLeftovers sends sig (0: none) to each live process of the holder's
// group or whose parent it is, and returns how many there were. A process
// is signalled through a pidfd opened before its stat was read, so a pid
// reused in between gets nothing.
func signalLeftovers(sig syscall.Signal) int {
	self, pgid := os.Getpid(), syscall.Getpgrp()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		st, err := procs.ReadStat(pid)
		if err == nil && !st.Dead() && (st.PGID == pgid || st.PPID == self) {
			n++
			if sig != 0 {
				_ = unix.PidfdSendSignal(fd, sig, nil, 0)
			}
		}
		unix.Close(fd)
	}
	return n
}
