package pgstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// tables are the tables the migrations make (a test holds the list to
// them): what a grant of toolhost's privileges covers, and nothing of
// another application's in the same schema.
var tables = []string{"toolhost_schema", "heads", "timeline", "events", "audit", "bugs", "bug_counts", "agent_state",
	"confirmations", "request_state_keys", "redeemed_states", "done_writes", "session_claims"}

// Tables names toolhost's tables.
func Tables() []string { return slices.Clone(tables) }

// decisionsReads are the tables a decisions-only client (the dashboard,
// `toolhost approve`) reads: what a live view shows, and the schema's
// version it checks at start.
var decisionsReads = []string{"toolhost_schema", "heads", "timeline", "events", "audit", "bugs", "bug_counts", "agent_state", "confirmations"}

// decisionsWrites is the one table it writes: a human's decision, and
// the pruning of closed entries that listing them does.
const decisionsWrites = "confirmations"

// GrantDecisions makes role a decisions-only role of this database: it
// may read what a live view shows and write the confirmations alone, so a
// dashboard (or `toolhost approve`) whose --store names that role writes
// only decisions because the database refuses everything else — whatever
// its code does. Any privilege the role had on toolhost's tables is
// revoked first; other tables are left alone. The role must exist (CREATE ROLE … LOGIN PASSWORD …,
// as the database's users are made), and the store's own connection must
// own the tables (a toolhost that migrated them). A newer toolhost's new
// tables need the grant again.
func (s *Store) GrantDecisions(ctx context.Context, role string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if v, err := readVersion(ctx, s.pool); err != nil || v != len(ms) {
		return s.classify(fmt.Errorf("the schema is at version %d, not %d: migrate it first (toolhost store migrate): %v", v, len(ms), err))
	}
	who := pgx.Identifier{role}.Sanitize()
	return s.tx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("role %q does not exist: create it first (CREATE ROLE %s LOGIN PASSWORD '…'), then grant it the decisions", role, who)
		}
		for _, t := range tables {
			if _, err := tx.Exec(ctx, `REVOKE ALL ON `+pgx.Identifier{t}.Sanitize()+` FROM `+who); err != nil {
				return err
			}
		}
		for _, t := range decisionsReads {
			if _, err := tx.Exec(ctx, `GRANT SELECT ON `+pgx.Identifier{t}.Sanitize()+` TO `+who); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `GRANT INSERT, UPDATE, DELETE ON `+pgx.Identifier{decisionsWrites}.Sanitize()+` TO `+who)
		return err
	})
}

// WritesOnlyDecisions reports whether the database lets this store's
// connection write nothing but the confirmations (GrantDecisions): then
// "writes only decisions" is the database's rule, not only the code's.
func (s *Store) WritesOnlyDecisions(ctx context.Context) (bool, error) {
	var others bool
	err := s.pool.QueryRow(ctx, `SELECT coalesce(bool_or(has_table_privilege(current_user, t, 'INSERT, UPDATE, DELETE, TRUNCATE')), false)
		FROM unnest($1::text[]) t WHERE t <> $2`, tables, decisionsWrites).Scan(&others)
	return !others, s.classify(err)
}
