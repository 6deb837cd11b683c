// Package procs is the one owner of the child processes toolhost starts:
// the bash tool's commands, the units spawn_units starts, the servers of
// stdio upstreams and (in tests, the demo and phase0-verify) toolhost serve
// itself. It starts, signals, waits for and stops all of them the same way:
//
//   - Each child is the leader of its own session (no controlling terminal)
//     and process group, forked from an OS thread locked for the child's
//     life, with only descriptors 0-2: every descriptor toolhost inherited
//     is marked close-on-exec when this package is initialised. A Spec's Confine runs on that
//     thread just before the fork (the Landlock ruleset of internal/confine),
//     so only the child is confined and the thread is never reused; the
//     parent-death signal (SIGKILL), which the kernel ties to the forking
//     thread, then fires only when toolhost itself dies. The Linux-only
//     parts live in *_linux.go files, each with a small variant for other
//     systems (macOS: no Landlock, parent-death signal or subreaper).
//   - Stopping is one policy: SIGTERM to the whole group, a grace period,
//     SIGKILL to what is left, until no process of the group remains. What
//     a leader leaves in its group when it exits is stopped before the
//     leader is reaped (its unreaped pid keeps the group id from being
//     reused); units keep their group until they are stopped.
//   - A process is identified by its pid together with its start time
//     (field 22 of /proc/<pid>/stat; on macOS the kern.proc sysctl's
//     p_starttime), so a recorded unit is never confused
//     with an unrelated process that later got the same pid, and one
//     toolhost process can report on and stop units another one started.
//   - A Manager with a warden starts, with its first child, a second process
//     of the same binary (selected by its first argument before any other
//     code runs) that holds a pipe only toolhost writes; when toolhost dies
//     in any way, even by SIGKILL, the pipe ends and the warden stops every
//     group still registered (detached children are not).
//
// This package must never open or write project files itself (log files
// come in already opened through the sandbox, rotated copies go out through
// the caller's Backup function), never run a shell, and never signal a
// process group whose leader's identity it cannot confirm.
package procs
