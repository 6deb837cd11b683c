// Package cli holds the toolhost cobra commands, one file per command. Main
// builds the command tree and maps errors to exit codes (2 for usage
// problems such as an unknown agent).
//
// Commands parse flags and call into session, engine and friends; they must
// never reimplement a check those packages own, and only serve may write
// protocol messages to stdout.
package cli
