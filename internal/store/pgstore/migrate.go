package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded changes, by version (NNNN_name.sql).
func migrations() ([]migration, error) {
	ents, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range ents {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: want NNNN_name.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %d (%s) out of sequence", m.version, m.name)
		}
	}
	return out, nil
}

// SchemaVersion is the schema this toolhost writes.
func SchemaVersion() int {
	ms, _ := migrations()
	return len(ms)
}

// migrationLock is the advisory lock key every toolhost takes to migrate,
// so two starting at once apply each change once.
const migrationLock = 0x746f6f6c686f7374 // "toolhost"

// NewerSchemaError is a database whose schema a newer toolhost wrote:
// this one must not write it.
type NewerSchemaError struct{ Have, Want int }

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("the database's toolhost schema is version %d, newer than this toolhost's %d: a newer toolhost migrated it; upgrade toolhost on this machine (nothing was changed)", e.Have, e.Want)
}

// Status is what `toolhost store status` shows of the schema.
type Status struct {
	Version int `json:"schema_version"`
	Want    int `json:"schema_wanted"`
}

// readVersion returns the schema version (0: none yet).
func readVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('toolhost_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM toolhost_schema`).Scan(&v)
	if err == pgx.ErrNoRows {
		return 0, nil
	}
	return v, err
}

// migrate applies the changes the database lacks, in one transaction
// under the advisory lock, and refuses a newer schema. It returns the
// versions before and after.
func migrate(ctx context.Context, pool *pgxpool.Pool) (from, to int, err error) {
	ms, err := migrations()
	if err != nil {
		return 0, 0, err
	}
	want := len(ms)
	// Most starts find the schema current: look first without the lock.
	if v, err := readVersion(ctx, pool); err == nil && v == want {
		return v, v, nil
	} else if err == nil && v > want {
		return v, v, &NewerSchemaError{Have: v, Want: want}
	}
	// The lock is taken before the transaction starts, so a toolhost that
	// waited for another's migration sees its tables.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return 0, 0, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback(ctx)
	v, err := readVersion(ctx, tx)
	if err != nil {
		return 0, 0, err
	}
	if v > want {
		return v, v, &NewerSchemaError{Have: v, Want: want}
	}
	if v == 0 {
		if _, err := tx.Exec(ctx, `CREATE TABLE toolhost_schema (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return 0, 0, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO toolhost_schema (version) VALUES (0)`); err != nil {
			return 0, 0, err
		}
	}
	for _, m := range ms[v:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return v, v, fmt.Errorf("schema migration %04d_%s: %w", m.version, m.name, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE toolhost_schema SET version = $1, migrated_at = now()`, want); err != nil {
		return 0, 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, err
	}
	return v, want, nil
}
