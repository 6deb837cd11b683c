// Package confine turns an agent's sandbox settings (or an upstream
// server's) into the confinement the kernel enforces on every process it
// starts: the bash tool's commands, the units spawn_units starts, stdio
// upstream MCP servers and, through `toolhost confine`, Claude CLI's own
// Bash. A confined process holds none of the human's authority: no
// capability, no controlling terminal (procs), no inherited descriptor
// (procs), none of toolhost's environment but what its kind and its
// sandbox.env pass (env.go), no way around its TCP rules (seccomp.go), no
// access to toolhost's secrets (hide.go) or servers (servers.go).
//
// Prepare is the one function that builds a Plan from the agent, the
// project dir, the unit and the command's private temp dir; Plan.Command is
// the one process spec every start path uses (its environment, and
// Plan.Restrict: capabilities, no_new_privs, the seccomp filter and the
// Landlock layers, applied on the OS thread procs forks the child from);
// `toolhost confine` (internal/confinecmd) starts the same spec and
// supervises it. With
// Request.Hold the spec starts a holder (holder.go) that keeps the command
// in the project's live registry, and in one stoppable process group, for
// as long as any process of it lives.
//
// What a Plan grants, and why it never grants more than the allow-list:
//
//   - `dir/**` grants writing beneath dir (created first through the sandbox
//     door if missing); `a/*/b/**` grants beneath each existing a/<x>/b; an
//     exact file name grants that file when it exists as a regular file
//     with one link. Any other pattern (agent-state/pm-*.json, **/*.md)
//     cannot be expressed as "beneath this directory" and grants commands
//     nothing: toolhost's tools write those paths.
//   - Every root is opened with openat2 beneath the project dir with
//     RESOLVE_NO_SYMLINKS, so a symlink planted in the tree (by this agent
//     or another) can never turn a grant into a grant elsewhere.
//   - toolhost's own stores (Stores: .toolhost/ — with the integrator's
//     units and port reservations —, timeline.ndjson, bugs/) are never writable by a
//     command, even when a pattern covers them: a root that contains a
//     store is replaced by its other entries, which also means nothing new
//     can be created directly in it.
//   - Linking or renaming into a write root from outside is refused by the
//     kernel (the refer right is granted only inside write roots).
//   - Plus the command's private temp dir ($TMPDIR) and /dev/null, /dev/zero,
//     /dev/full, /dev/tty. Reads and execution stay allowed everywhere but
//     toolhost's secrets unless the agent sets sandbox.readAllowList.
//   - TCP connect and bind follow sandbox.network (Landlock ABI ≥ 4; a unit
//     binds only its own port by default); signals and abstract unix
//     sockets are scoped to the command's own domain (ABI ≥ 6), so a
//     command cannot signal toolhost or any process outside it.
//
// When the kernel cannot confine (no Landlock or seccomp filters — macOS has
// neither: the *_other.go files —, an ABI too old for a right the plan
// needs — signal scoping, ABI 6, for every plan),
// sandbox.commands decides: require refuses with UnavailableError,
// best-effort runs with what is enforceable and the Plan says what is not,
// off never confines (the environment is still filtered). TOOLHOST_LANDLOCK_ABI caps the ABI
// used (0: behave as a machine without Landlock), for tests and for
// reproducing an older kernel.
//
// This package must never restrict a thread it was not asked to (it has no
// all-threads path: applied to toolhost's server process that would confine
// toolhost itself), never follow a symlink when it opens a root, never widen
// a pattern it cannot express, and never pass a variable of toolhost's
// environment that the process's kind or sandbox does not name.
package confine
