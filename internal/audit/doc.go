// Package audit records one row per tool call, whatever its fate, in
// .toolhost/audit.ndjson under the project dir (SPEC §8), and reads the
// trail back for `toolhost audit`.
//
// Rows carry the arguments as received with secret-looking keys redacted
// (RedactArguments). FileSink appends each row with one O_APPEND write, so
// several toolhost processes can share the file, and fsyncs in batches.
// A sink failure must never fail a call: the engine bounds every write,
// logs a row that did not make it as audit_write_failed and counts it. This
// package must never decide a call's outcome.
package audit
