// Package pgstore is PostgreSQL as a store.Store (github.com/jackc/pgx/v5),
// for a project whose agents run on several machines: every machine points
// --store at one database, and the project id (--pid) is the tenant key of
// every row.
//
// The schema is embedded and versioned (migrations/), applied at start in
// one transaction under an advisory lock; a database whose schema is newer
// than this toolhost's is refused. Numbers are taken from a head row per
// project and log locked FOR UPDATE, so they are strictly increasing in
// commit order; dedupe and single use are held by unique constraints and
// row locks; the audit trail is chained by internal/audit's rule over the
// lines as stored, so the same verifier checks it; live readers follow
// changes with LISTEN/NOTIFY. A database that cannot be reached is a
// store.UnavailableError; writes are retried with backoff, and every write
// carries a key made once per logical write, so a retry after a lost
// answer (a commit whose result never arrived) finds its row instead of
// writing a second.
//
// It must never hold a lock across a call to anything but the database,
// and never report a write that has no row.
package pgstore
