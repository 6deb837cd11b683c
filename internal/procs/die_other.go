//go:build !linux

package procs

import "syscall"

// setDefaultAction does nothing: x/sys offers no sigaction outside Linux.
// The signals Go's runtime ends the process for once reset (SIGTERM,
// SIGINT, SIGHUP, SIGQUIT …) still end it; for SIGUSR1, SIGUSR2 and the
// like DieBy returns, and the caller exits with the shell's 128+n.
func setDefaultAction(syscall.Signal) {}
