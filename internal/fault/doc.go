// Package fault is the vocabulary of a call that went wrong, shared by the
// code that produces failures (tools, the sandbox door, the Bash guard, the
// engine's stages) and the one boundary that classifies them (the engine).
//
// Kind is the closed set of error kinds: every audit row's error_kind and the
// kind the server maps to the wire. A Rejection is an error that carries its
// Kind; the engine finds it with errors.As, nowhere else compares kinds of
// errors.
//
// Explain is the one place that decides which words of a system error the
// model reads: a Safe error's message (written for the model, like
// Tailscale's vizerror), a CorruptFile, an OS error in our own words, never
// the text of the error itself, which goes to the log with the error id.
//
// This package is a leaf: it must never import another toolhost package, so
// that the lowest layers (sandbox, bashguard) can produce its errors.
package fault
