package procs

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// AdoptOrphans makes this process a child subreaper: every process its
// descendants leave behind when their parent exits is reparented to it
// rather than to init, so a process that started a command can tell, from
// the kernel's process tree, when the last process of that command is gone
// — a command cannot leave it, whatever it forks or setsids.
func AdoptOrphans() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_CHILD_SUBREAPER, 1, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", e)
	}
	return nil
}

// awaitOrphans has nothing left to wait for: as a subreaper, ReapAll has
// reaped every process of the command, wherever it went.
func awaitOrphans(Group) {}
