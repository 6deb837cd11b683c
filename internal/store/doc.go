// Package store is the one layer between toolhost and a project's shared
// state: the agents' timeline, the events, the audit trail and its chain,
// the bug tracker and its index, the agents' todolists and runtime states,
// and the confirmations waiting for a human (with the request states of
// multi-round-trip confirmations). It holds the interfaces (Store and one
// per store), the record types every implementation and every reader
// shares, and the error a store that cannot be reached returns.
//
// Two implementations satisfy it: internal/store/filestore, the project
// dir's files (the embedded default, the layout toolhost always had), and
// internal/store/pgstore, PostgreSQL, for agents on several machines;
// internal/store/open chooses one from --store / TOOLHOST_STORE. The
// contract tests in internal/store/storetest run against both.
//
// Tools, serve, the hook, audit, approve and the dashboard reach the state
// only through these interfaces. Machine-local state (running units, port
// reservations, pinned upstreams, locks) is not shared: it stays in the
// project's .toolhost/ on each machine (internal/store/local).
//
// This package performs no I/O: it must never open a file or a connection.
package store
