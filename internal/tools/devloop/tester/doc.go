// Package tester holds the Tester's tools: parse_vitest
// turns a Vitest JSON report into counts and failures, hint_builder turns
// failures into a short ranked list of hints for the coder, and bug_open,
// bug_transition and bug_list are the bug tracker that every agent's
// toolhost process shares.
//
// Reports are read through the agent's door (c.Files.ReadFile, relative to
// the project dir). Bugs are written only through the services' door
// (c.Shared) by internal/bugs, under cross-process locks. Tools here never
// check permissions or paths themselves — the engine and the sandbox do —
// and never write a report or a bug with os directly.
package tester
