package procs

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReapAll waits for every child of this process, the orphans adopted by
// AdoptOrphans included, until it has none left, then (where the system
// cannot adopt orphans) until group g, the command's, is empty. Only a
// process whose children are all its own to reap may call it (it takes any
// child's exit status): a holder whose one spawned child has already been
// reaped.
func ReapAll(g Group) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			break // ECHILD: nobody is left
		}
	}
	awaitOrphans(g)
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
