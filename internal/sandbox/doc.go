// Package sandbox is the one door through which toolhost writes files.
//
// A Sandbox is bound to a project directory and a write allow-list of
// doublestar globs (relative to the project dir). Every write, by a tool or by
// a service (timeline, events, bugs), is checked against the allow-list and
// performed through os.Root so that traversal and symlink escapes fail at the
// kernel boundary. Writes are atomic: a temp file in the same directory,
// fsync, rename. Read-modify-write of shared files holds a cross-process lock
// (gofrs/flock) under .toolhost/locks.
//
// This package must never write anywhere but through os.Root on the project
// dir, and never create symlinks.
package sandbox
