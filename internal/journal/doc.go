// Package journal implements the two shared logs every tool may write:
// events (.toolhost/events.ndjson, SPEC §9) and the agents' timeline
// (timeline.ndjson) whose seq is strictly increasing across processes —
// appended all or nothing, rotated by size (the seq continues across the
// files), and read back across rotated files by ReadEvents/ReadTimeline and
// followed live by FollowEvents/FollowTimeline.
//
// Both write through the sandbox door (a service sandbox whose allow-list is
// exactly these files); this package must never open files itself for
// writing.
package journal
