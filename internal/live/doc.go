// Package live records which agents of a project may have confined commands
// running at this moment, from the kernel's own bookkeeping: a command
// started through `toolhost confine --hold` (internal/confinecmd) runs under
// a process that is its child subreaper (no process of the command can
// leave its subtree) and holds an exclusive lock on a file of Dir until the last of them is gone. The
// kernel releases the lock when that process ends, however it ends, so a
// lock that is taken is a subtree that may still act, and a free lock is
// one that cannot.
//
// The hook reads it before it lets the agent CLI write a file itself: a
// command still running could swap a directory of the path for a symbolic
// link between the check and the write.
//
// Dir is under .toolhost/, which no agent's commands may write.
package live
