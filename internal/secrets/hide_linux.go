package secrets

import (
	"fmt"
	"syscall"
)

// HideProcess makes this process's memory, descriptors and environment
// unreadable to the other processes of the user (PR_SET_DUMPABLE 0: the
// kernel then refuses /proc/PID/mem, /proc/PID/environ, /proc/PID/fd and
// ptrace to anything without CAP_SYS_PTRACE), for a process that holds a
// secret in memory. The children it starts are dumpable again once they
// exec, as any new program is.
func HideProcess() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); e != 0 {
		return fmt.Errorf("secrets: prctl(PR_SET_DUMPABLE, 0): %w", e)
	}
	return nil
}
