package procs

import (
	"errors"
	"syscall"
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
