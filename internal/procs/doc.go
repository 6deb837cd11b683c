// Package procs owns the unit processes a toolhost session starts: each unit
// runs from an argv (no shell) as the leader of its own process group, its
// stdout and stderr go straight to log files the caller opened, and stopping
// it means SIGTERM to the whole group, a grace period, then SIGKILL, until no
// process of the group is left.
//
// A process is identified by its pid together with its start time (field 22
// of /proc/<pid>/stat), so a recorded unit is never confused with an
// unrelated process that later got the same pid. That is what lets one
// toolhost process report on, and stop, units another one started.
//
// This package must never open or write files itself (log files come in
// already opened through the sandbox, rotated copies go out through the
// caller's Backup function), never run a shell, and never signal a process
// group whose leader's identity it cannot confirm.
package procs
