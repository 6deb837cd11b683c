// Package testutil holds helpers shared by tests: building the real toolhost
// binary once per test process, and locating optional external tools (tsc,
// chromium) so that a test fails in CI when one is missing instead of
// skipping silently.
//
// Only _test.go files may import it.
package testutil
