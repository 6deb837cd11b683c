// Package testutil holds helpers shared by tests: building the real toolhost
// binary once per test process and driving it over stdio (Serve, CallTool,
// ListTools), building the in-process call context a tool receives (NewCtx,
// FakeClock), a log buffer safe for concurrent writes (SyncBuffer), and
// locating optional external tools (tsc, chromium) so that a test fails in
// CI when one is missing instead of skipping silently.
//
// Only _test.go files may import it. It must not import any tool package
// (internal/tools/...), whose tests import it.
package testutil
