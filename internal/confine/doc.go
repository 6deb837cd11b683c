// Package confine turns an agent's sandbox settings into a Landlock ruleset
// that the kernel enforces on every command the agent starts: the bash
// tool's commands, the units spawn_units starts and, through
// `toolhost confine`, Claude CLI's own Bash.
//
// Prepare is the one function that builds the ruleset (a Plan) from the
// agent, the project dir, the unit and the command's private temp dir. Both
// ways of applying it use the same Plan: procs forks the child from an OS
// thread that called Plan.Restrict (in-process, no extra program start), and
// `toolhost confine` calls Plan.Restrict and then execs the command.
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
//     /dev/full, /dev/tty. Reads and execution stay allowed everywhere unless
//     the agent sets sandbox.readAllowList.
//   - TCP connect and bind follow sandbox.network (Landlock ABI ≥ 4; a unit
//     binds only its own port by default); signals and abstract unix
//     sockets are scoped to the command's own domain (ABI ≥ 6), so a
//     command cannot signal toolhost or any process outside it.
//
// When the kernel cannot confine (no Landlock, an ABI too old for a rule the
// agent set), sandbox.commands decides: require refuses with
// UnavailableError, best-effort runs with what is enforceable and the Plan
// says what is not, off never confines. TOOLHOST_LANDLOCK_ABI caps the ABI
// used (0: behave as a machine without Landlock), for tests and for
// reproducing an older kernel.
//
// This package must never restrict a thread it was not asked to (it has no
// all-threads path: applied to toolhost's server process that would confine
// toolhost itself), never follow a symlink when it opens a root, and never
// widen a pattern it cannot express.
package confine
