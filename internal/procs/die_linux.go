package procs

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setDefaultAction sets sig's disposition to SIG_DFL with rt_sigaction (an
// all-zero kernel sigaction: SIG_DFL, no flags, empty mask).
func setDefaultAction(sig syscall.Signal) {
	var act [4]uint64
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
}
