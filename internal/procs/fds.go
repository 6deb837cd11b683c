package procs

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// A descriptor toolhost inherited without close-on-exec (`exec 7>>file;
// toolhost …` in the shell that started it, a pipe an agent CLI forgot to
// mark) would otherwise reach every child: Go opens its own descriptors
// close-on-exec, but cannot know about those it was born with, and exec.Cmd
// passes on whatever is still open. So before any child can start, every
// descriptor above stderr is marked close-on-exec: toolhost itself can still
// use them, no child ever sees them, and a child gets exactly its stdin,
// stdout and stderr.
func init() { closeInheritedOnExec() }

// markListedOnExec marks close-on-exec every descriptor above stderr that
// dir (the system's list of this process's descriptors) names.
func markListedOnExec(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err == nil && fd > 2 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}
