// Package ndjson is the shape on disk of a log, toolhost's one name for an
// append-only file of one JSON document per line — the audit trail, events
// and the timeline are logs: lines are only ever appended whole, and the
// file is rotated by size into numbered siblings
// (audit.ndjson → audit.000001.ndjson, audit.000002.ndjson …, numbers only
// ever increasing, the oldest first); this package names them and reads
// across them.
//
//   - RotateAt is every log's rotation size from its --*-max-bytes flag.
//   - RotatedName and Segments agree on the names for writer and readers.
//   - Reader streams a log's lines, oldest first, across its rotated files,
//     in constant memory (one line at a time, overlong lines skipped without
//     being buffered); Options.Since skips a whole rotated file whose last
//     write is older than the instant asked for. A consumer that cannot parse
//     a line rejects it (Reader.Reject), and BadLines reports where such lines
//     were instead of failing the read.
//   - Backward hands out a log's lines newest first, reading each file from
//     its end, so what it costs depends on how many lines are taken, not on
//     the size of the log; it returns the cursor to Follow from.
//   - Follow tails a log for a live view (the dashboard's event and audit
//     streams): it delivers every line once, across a rotation, from a
//     Cursor that survives a reconnect.
//
// This package only reads, through an *os.Root of the project dir (so a
// symlink cannot lead a reader outside it). Appending and rotating are the
// sandbox door's (sandbox.AppendLog, sandbox.RotateLog, and WriteWhole, the
// one whole-or-nothing append, which the audit sink uses on the descriptor
// it keeps). It must never
// write, rename or remove a file.
package ndjson
