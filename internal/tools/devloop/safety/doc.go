// Package safety holds the tools that expose toolhost's two safety gates to
// the agents: bash (run a shell command in the agent's cwd, after the
// engine's Bash guard, with a timeout, an output cap and its whole process
// group killed on timeout or cancel) and sandbox_check (ask the agent's
// sandbox for the verdict a write or read of a path would get).
//
// These tools must never check the guard or the sandbox themselves in a way
// that could disagree with the real gates: bash declares its command field
// (tool.ScriptField) and relies on the engine running the Bash guard on it,
// and sandbox_check asks the same sandbox door the writes go through.
package safety
