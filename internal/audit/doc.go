// Package audit records one row per tool call, whatever its fate, in
// .toolhost/audit.ndjson under the project dir (SPEC §8).
//
// A sink failure must never fail a call: the engine logs it as
// audit_write_failed and counts it. This package must never decide a call's
// outcome.
package audit
