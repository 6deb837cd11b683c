//go:build !linux

package procs

// closeInheritedOnExec walks /dev/fd, the BSDs' and macOS's list of this
// process's descriptors (no close_range with a close-on-exec flag there).
func closeInheritedOnExec() { markListedOnExec("/dev/fd") }
