// Package lazyre compiles a regular expression on first use instead of at
// package initialisation: every toolhost process runs the package inits of
// all tools, while a session uses only a few tools' expressions, and
// compiling them all cost ~2 ms of every cold start.
//
// It must never hide an invalid expression: the first use panics, as
// regexp.MustCompile does, and tests use every expression.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr once, on its first call.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
