// Package demo is toolhost's main job on the embedded defaults: a scripted
// devloop across all six agents on a temp project, each agent a real
// `toolhost serve` subprocess driven over stdio JSON-RPC as an agent CLI
// would, plus the small HTTP unit the Integrator starts (`toolhost
// demo-unit`).
//
// The demo only calls tools through the protocol (and the guard and hook
// through their commands); it must never write the project itself except
// where it plays an agent CLI's own Write tool, which it checks with the
// PreToolUse hook first. It must never leave a process behind: every
// server is closed (stdin, then wait) however a step ends, which also stops
// the unit.
package demo
