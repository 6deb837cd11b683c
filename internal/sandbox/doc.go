// Package sandbox is the one door through which toolhost writes, and tools
// read and list, project files.
//
// A Sandbox is bound to a project directory and a write allow-list of
// doublestar globs (relative to the project dir). Every write, by a tool or by
// a service (timeline, events, bugs), is checked against the allow-list and
// then performed through os.Root, so the kernel refuses an escape even when
// the tree changes between the check and the write.
//
// How a write is checked and performed:
//
//   - The path is validated as text: relative, no NUL, not empty or ".", at
//     most MaxPathLen bytes and MaxPathDepth components, cleaned before it is
//     matched (so "prd/../../etc/passwd" is matched as "../etc/passwd" and
//     refused).
//   - It must match a pattern and lie strictly below that pattern's base, the
//     literal directories before the first glob meta character ("prd" for
//     "prd/**", "agent-state" for "agent-state/pm-*.json"); writing the base
//     itself is refused, which also stops prefix confusion ("prd-evil/x").
//   - A directory component that starts with a dot (".git") is refused unless
//     a segment of the matching pattern that starts with a dot names it
//     (".toolhost/**" names ".toolhost").
//   - The parent directory is opened one component at a time, each through
//     os.Root.OpenRoot on its parent, after an Lstat that proves it is a real
//     directory and not a symlink, and with a check that the directory opened
//     is the one that was inspected (device and inode). The chain of roots
//     therefore always ends in a directory below the allowed base; a symlink
//     anywhere in the path, in the middle or dangling, is refused.
//   - An existing leaf must be a regular file with exactly one link (a hard
//     link to a file outside would otherwise be truncated through it).
//   - The content is written to a new temp file (O_CREATE|O_EXCL, which never
//     follows a symlink) in that directory, fsynced and renamed over the leaf,
//     so a kill at any instant leaves the old or the new file, and a leaf
//     swapped for a symlink at the last moment is replaced, never followed.
//
// Read-modify-write of shared files holds a cross-process flock on a file
// under .toolhost/locks; an atomic replace holds its directory's lock shared
// while its temp file exists, which is what lets RemoveStaleTemps (the lock
// taken exclusively) remove the temp files of killed writers and never one
// in use.
//
// Appends to the NDJSON logs (AppendLog) happen under the file's lock and
// land whole or not at all: a short write is cut back to the size before,
// and a torn last line of a killed writer is cut off before the next line.
// A log with a size limit is rotated under the same lock into numbered
// siblings named by package ndjson.
//
// This package must never write anywhere but through os.Root handles opened
// this way, never follow a symlink on a write, and never create a symlink.
package sandbox
