package procs

import (
	"os"
	"os/signal"
	"syscall"
)

// DieBy ends this process by sig's default action, as a supervisor that
// stands in for its command dies the way the command died (a signal whose
// default is not to end a process returns). signal.Reset is not enough:
// for the signals Go's runtime ignores unless notified (SIGUSR1, SIGUSR2,
// SIGWINCH…) it keeps its own handler, which drops them. So the
// disposition is set to the default directly where the system allows it
// (setDefaultAction), then the signal is sent; the kernel ends the whole
// process as it generates a fatal signal whose action is the default.
func DieBy(sig syscall.Signal) {
	signal.Reset(sig)
	setDefaultAction(sig)
	_ = syscall.Kill(os.Getpid(), sig)
}
