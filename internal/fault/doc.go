// Package fault is the vocabulary of a call that went wrong, shared by the
// code that produces failures (tools, the sandbox door, the Bash guard, the
// engine's stages) and the one boundary that classifies them (the engine).
//
// Kind is the closed set of error kinds: every audit row's error_kind and the
// kind the server maps to the wire. A Rejection is an error that carries its
// Kind; the engine finds it with errors.As, nowhere else compares kinds of
// errors.
//
// This package is a leaf: it must never import another toolhost package, so
// that the lowest layers (sandbox, bashguard) can produce its errors.
package fault
