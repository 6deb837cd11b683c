// Package filestore is the project dir's files as a store.Store: the
// embedded default, the layout toolhost always wrote, so an existing
// project is read as it is. It composes the file code of each store —
// internal/journal (timeline, events), internal/audit (the chained trail
// and its FileSink), internal/bugs (bug files and their index),
// internal/confirm (the confirmations file) — and keeps the agents' states
// and the request states itself, every write through one sandbox door
// whose allow-list is exactly these files, under the cross-process locks
// that make six agents' processes on one machine safe.
//
// It must never be used across machines: flock(2) over a network
// filesystem is not a lock to rely on (that is what internal/store/pgstore
// is for).
package filestore
