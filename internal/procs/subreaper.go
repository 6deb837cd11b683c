package procs

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process a child subreaper: every process its
// descendants leave behind when their parent exits is reparented to it
// rather than to init, so a process that started a command can tell, from
// the kernel's process tree, when the last process of that command is gone
// — a command cannot leave it, whatever it forks or setsids.
func BecomeSubreaper() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_CHILD_SUBREAPER, 1, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", e)
	}
	return nil
}

// ReapAll waits for every child of this process, the orphans reparented to
// it included, until it has none left. Only a process whose children are
// all its own to reap may call it (it takes any child's exit status): a
// subreaper whose one spawned child has already been reaped.
func ReapAll() {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: nobody is left
		}
	}
}

// HandOverStdio points this process's descriptors 0-2 at /dev/null, once a
// child it started holds the streams: whoever reads them then sees their end
// when the child's processes close them, not when this process exits.
func HandOverStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer null.Close()
	for _, fd := range []int{0, 1, 2} {
		_ = unix.Dup2(int(null.Fd()), fd)
	}
}
