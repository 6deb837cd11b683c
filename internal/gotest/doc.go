// Command gotest runs `go test -json` with the arguments it is given and
// prints a short account as the run goes: one line per package when it
// ends, the whole output of every failed test, a progress line naming the
// tests still running whenever 30 s pass without a line, and at the end
// the tests skipped because a program they drive is missing (with the
// command that installs it). It exits with go test's status.
//
// `make test` and `make test-go` run the tests through it, so a first run,
// which compiles every package with the race detector and drives real
// browsers and binaries, is never silent for minutes; `go test` itself
// stays the plain tool.
//
// It must never decide a test's fate: it only reports what go test says.
package main
