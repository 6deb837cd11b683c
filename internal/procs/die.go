package procs

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DieBy ends this process by sig's default action, as a supervisor that
// stands in for its command dies the way the command died (a signal whose
// default is not to end a process returns). signal.Reset is not enough:
// for the signals Go's runtime ignores unless notified (SIGUSR1, SIGUSR2,
// SIGWINCH…) it keeps its own handler, which drops them. So the
// disposition is set to SIG_DFL with rt_sigaction directly (an all-zero
// kernel sigaction: SIG_DFL, no flags, empty mask), then the signal is
// sent; the kernel ends the whole process as it generates a fatal signal
// whose action is the default.
func DieBy(sig syscall.Signal) {
	signal.Reset(sig)
	var act [4]uint64
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
}
