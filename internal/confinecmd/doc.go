// Package confinecmd is `toolhost confine`: it runs one command confined by
// the kernel to what an agent may write (internal/confine builds the plan;
// this package supervises the command) and, with --hold, keeps the
// project's live registry (internal/live) told for as long as any process
// of the command lives — what the hook puts in front of the agent CLI's own
// Bash.
//
// It is the one owner of that command, linked into two binaries: toolhost
// (`toolhost confine`, through cobra in internal/cli) and the small helper
// cmd/toolhost-confine, shipped beside it, which the hook's rewrite runs
// when it is there, so that every Bash command of the CLI pays a small exec
// instead of a whole toolhost start. This package must therefore never
// import what only a server needs (cobra, the rules engine, tracing,
// esbuild): the helper's test (cmd/toolhost-confine) checks its
// dependencies. It must never exec the command in place either: the
// command runs in its own session, confined, and this process stays
// outside its Landlock domain to relay signals and report its status.
package confinecmd
