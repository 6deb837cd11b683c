// Package live records which confined commands of a project may be running
// at this moment, from the kernel's own bookkeeping: every confined command
// toolhost starts (the hook's Bash through `confine --hold` of
// internal/confinecmd; the bash tool, spawn_units' units and stdio
// upstreams through confine's holder) runs
// under a process that is its child subreaper (no process of the command
// can leave its subtree) and holds an exclusive lock on a file of Dir until
// the last of them is gone. The kernel releases the lock when that process
// ends, however it ends, so a lock that is taken is a subtree that may
// still act, and a free lock is one that cannot.
//
// The hook reads it before it lets the agent CLI write a file itself: a
// command still running could swap a directory of the path for a symbolic
// link between the check and the write.
//
// Dir is under .toolhost/, which no agent's commands may write; a holder
// confined by the kernel writes to its registration only through the
// descriptor it inherited. This package must never take a free lock's file
// for a running command, nor a taken one for a stale file.
package live
