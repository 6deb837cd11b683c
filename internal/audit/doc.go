// Package audit records one row per tool call, whatever its fate, in
// .toolhost/audit.ndjson under the project dir (a call without its row is a
// bug: rejections, timeouts and panics are rows too), and reads,
// verifies and exports the trail for `toolhost audit`.
//
// Rows carry the arguments as received with secret-looking keys redacted
// (RedactArguments). FileSink appends each row with one write under the
// trail's cross-process lock, so the toolhost processes of a project share
// one file and one hash chain (chain.go): every line carries its number and
// the hash of the line before it, and Verify names the first line that was
// edited, removed, reordered or inserted. The trail is a log (package
// ndjson): appends are all or nothing (sandbox.WriteWhole: a full disk cuts
// the partial row back and the row waits in memory), fsync is
// batched and followed by a checkpoint of the chain's end, and the file is
// rotated by size into numbered siblings that every reader (Each, StatsOf,
// Verify, the OTLP export) streams across in constant memory.
//
// A sink failure must never fail a call: the engine bounds every write,
// logs a row that did not make it as audit_write_failed and counts it. This
// package must never decide a call's outcome, and never write the trail
// but through FileSink.
package audit
