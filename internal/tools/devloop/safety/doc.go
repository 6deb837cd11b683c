// Package safety holds the tools that expose toolhost's two safety gates to
// the agents: bash (run a shell command in the agent's cwd, after the
// engine's Bash guard, confined by the kernel to the agent's allow-list,
// with a timeout, an output cap and its whole process group stopped on
// timeout or cancel) and sandbox_check (ask the agent's
// sandbox for the verdict a write or read of a path would get).
//
// These tools must never check the guard or the sandbox themselves in a way
// that could disagree with the real gates: bash declares its command field
// (tool.ScriptField) and relies on the engine running the Bash guard on it
// and on the confinement confine.Prepare builds (it never judges a path of
// the command), starts its command only through the session's process owner
// (callctx Services.Procs), and sandbox_check asks the same sandbox door the
// writes go through.
package safety
