// Package callctx is the context of one tool call (Ctx): who is calling
// (project id, agent, unit, session, company, call id), where the project
// lives, and the services the tool may use (files through the sandbox door,
// timeline, events, clock, log, progress).
//
// Tools get everything through Ctx. This package holds only the shape and the
// identity resolution; it must never perform I/O of its own or reach a
// package-level singleton, so a tool can be tested with fakes.
package callctx
