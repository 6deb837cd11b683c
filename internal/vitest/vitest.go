// Package vitest is the one reader of the JSON report `vitest run
// --reporter=json` writes (Vitest 1 to 4): it checks the report's shape,
// counts the tests, and turns every failure — a failed test, a test file
// that did not load, a hook that failed outside any test, a run Vitest
// marked failed with nothing failing — into one Failure with its kind, its
// message, the line in the test file and the frame where the error was
// thrown; a test that raised several errors (expect.soft) is a failure per
// error. A report of no test file is never a run of 0 tests. The Tester's
// parse_vitest and hint_builder and the Bug Triager's
// evidence and classifier all read reports through it, so they never
// disagree on what a report says.
//
// What the versions differ in, and how the reader deals with it:
//   - Vitest 1 keeps only an error's message (no "TypeError:" prefix, no
//     stack) and sets an assertion's location to where the error was thrown,
//     in whichever file that is; Vitest 2+ keep the whole stack and set
//     location (with --includeTaskLocation) to the test's declaration, and
//     give every assertion a "meta" object, which is how the two are told
//     apart.
//   - Tests whose file's beforeAll failed are "pending" (1) or "skipped"
//     (3, 4), and the file's message holds the hook's error — unless the
//     hook sits inside a describe block, where the JSON report drops it.
//
// It parses bytes handed to it; it must never read or write a file.
package vitest
