// Package lazyre compiles a regular expression on first use instead of at
// package initialisation: every toolhost process runs the package inits of
// all tools, while a session uses only a few tools' expressions, and
// compiling them all cost ~2 ms of every cold start.
//
// It must never hide an invalid expression: the first use panics, as
// regexp.MustCompile does, and every expression given to New is recorded so
// that a test of the whole program (internal/cli) compiles them all, used or
// not.
package lazyre

import (
	"regexp"
	"slices"
	"sync"
)

var (
	mu       sync.Mutex
	recorded []string
)

// New returns a function that compiles expr once, on its first call.
func New(expr string) func() *regexp.Regexp {
	mu.Lock()
	recorded = append(recorded, expr)
	mu.Unlock()
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Recorded returns every expression New has been given in this program,
// for a test to compile them all.
func Recorded() []string {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(recorded)
}
