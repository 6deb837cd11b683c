package procs

import "golang.org/x/sys/unix"

func closeInheritedOnExec() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11 have no CLOSE_RANGE_CLOEXEC.
	markListedOnExec("/proc/self/fd")
}
