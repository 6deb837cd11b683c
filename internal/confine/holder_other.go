//go:build !linux

package confine

import (
	"os"
	"syscall"

	"github.com/toolhost/toolhost/internal/procs"
)

// nest has nothing to add: the holder's layers (a Landlock scope, the
// seccomp pin) are only asked for where the machine has them (holderSpec
// reads the plan's scoped and canFilter, both off here).
func nest([]string) error { return nil }

// signalLeftovers sends sig (0: none) to each live process of the
// holder's group but itself, and returns how many there were. Without
// pidfds a pid reused between the listing and the signal could be hit;
// the group is the command's own, so only its processes are listed.
func signalLeftovers(sig syscall.Signal) int {
	self := os.Getpid()
	members, err := procs.GroupMembers(syscall.Getpgrp())
	if err != nil {
		return 0
	}
	n := 0
	for _, pid := range members {
		if pid == self {
			continue
		}
		n++
		if sig != 0 {
			_ = syscall.Kill(pid, sig)
		}
	}
	return n
}
