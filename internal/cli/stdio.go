package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollableStdio returns stdin and stdout as files the Go runtime's network
// poller waits on, when they are pipes or sockets (what an agent CLI
// connects: Node's child_process gives socket pairs, Go's os/exec pipes).
//
// Go opens fd 0 and 1 in blocking mode, so every read parks an OS thread in
// read(2) and hands the request to a goroutine that another thread must be
// woken to run: a cross-CPU wake-up on every message, the largest single
// cost of a small call on a two-core VM (docs/benchmarks.md). Through the
// poller, the thread that finds the message ready runs it.
//
// The descriptors are duplicated (the originals stay owned by os.Stdin and
// os.Stdout) and O_NONBLOCK is set on the shared file description; restore
// puts it back as it was, so a pipe or socket handed on after we exit is
// not left non-blocking. A terminal or a regular file is returned as is.
func pollableStdio(in io.Reader, out io.Writer) (io.Reader, io.Writer, func()) {
	var restores []func()
	restore := func() {
		for _, r := range restores {
			r()
		}
	}
	if f, ok := in.(*os.File); ok {
		if p, undo := pollable(f); p != nil {
			in = p
			restores = append(restores, undo)
		}
	}
	if f, ok := out.(*os.File); ok {
		if p, undo := pollable(f); p != nil {
			out = p
			restores = append(restores, undo)
		}
	}
	return in, out, restore
}

// pollable returns a non-blocking duplicate of f, or nil when f is not a
// pipe or socket or cannot be switched.
func pollable(f *os.File) (*os.File, func()) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil, nil
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, nil
	}
	dup, flags := -1, 0
	if err := sc.Control(func(fd uintptr) {
		if flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0); err == nil {
			dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		}
	}); err != nil || dup < 0 {
		return nil, nil
	}
	if flags&unix.O_NONBLOCK == 0 {
		if err := unix.SetNonblock(dup, true); err != nil {
			_ = unix.Close(dup)
			return nil, nil
		}
	}
	p := os.NewFile(uintptr(dup), f.Name())
	return p, func() {
		if flags&unix.O_NONBLOCK == 0 {
			if sc, err := p.SyscallConn(); err == nil {
				_ = sc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
			}
		}
		_ = p.Close()
	}
}
