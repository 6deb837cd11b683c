// Package journal implements the two logs (package ndjson) every tool may
// write:
// events (.toolhost/events.ndjson: one line per thing a tool did, for live
// views such as the dashboard) and the agents' timeline
// (timeline.ndjson) whose seq is strictly increasing across processes —
// appended all or nothing, rotated by size (the seq continues across the
// files), and read back across rotated files by ReadEvents/ReadTimeline and
// followed live by FollowEvents/FollowTimeline.
//
// Both write through the sandbox door (a service sandbox whose allow-list is
// exactly these files); this package must never open files itself for
// writing.
package journal
