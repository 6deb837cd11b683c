// Package integrator holds the Integrator agent's tools:
// port_picker, spawn_units, health_wait, run_case, parse_placeholder and
// collect_stderr. They reserve loopback ports, run the project's units as
// real process groups, wait for them to answer, drive HTTP test cases
// against them and read what they printed to stderr.
//
// What they record lives under integration/ in the project dir (cases/,
// runs/, logs/), written through the agent's sandbox door; the port
// reservations and the units' process groups are toolhost's machine-local
// state in .toolhost/ (ports.json, units.json, internal/store/local),
// written through the services' door, never by a command, and updated under
// a cross-process lock so several toolhost processes agree on ports and
// units.
//
// Units run confined by the kernel to the integrator's allow-list
// (internal/confine), binding only their own port by default; a unit
// recorded as running whose toolhost is gone is stopped by the next
// spawn_units call, unless it was started detached.
//
// These tools must never run a shell, never send a request to anything but
// a loopback address, never let an HTTP request go through a proxy taken
// from the environment, never expand an environment variable that is not on
// the policy's env allow-list, and never start, signal or look up a process
// except through the session's process owner (callctx Services.Procs), which
// confirms a process's pid and start time before it signals it.
package integrator
