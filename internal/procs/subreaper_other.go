//go:build !linux

package procs

import (
	"os"
	"slices"
	"time"
)

// AdoptOrphans does nothing: macOS has no child subreaper, so what a
// command's processes leave behind goes to launchd. ReapAll waits for the
// command's process group instead, which a process that moves to a group
// or session of its own leaves unseen.
func AdoptOrphans() error { return nil }

// awaitOrphans polls until no live process of g is left.
func awaitOrphans(g Group) {
	for {
		// The caller itself may be of the group (a holder whose command
		// stays in its group): the group is empty when only it is left.
		m, err := GroupMembers(g.PGID)
		if err != nil || len(slices.DeleteFunc(m, func(pid int) bool { return pid == os.Getpid() })) == 0 {
			return
		}
		time.Sleep(orphanPoll)
	}
}

// orphanPoll is how often a holder looks for the command's group: a lock
// held a moment longer costs nothing, a busy poll for hours would.
const orphanPoll = 250 * time.Millisecond
