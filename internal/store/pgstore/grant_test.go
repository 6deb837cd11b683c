package pgstore_test

import (
	"context"
	"errors"
	neturl "net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// asRole is url connecting as role instead of the cluster's owner.
func asRole(url, role string) string { return strings.Replace(url, "toolhost@", role+"@", 1) }

// TestGrantDecisions: a role made decisions-only reads the project's
// state and decides a confirmation, and the database refuses it every
// other write (timeline, audit, bugs, agent state), whatever asks.
func TestGrantDecisions(t *testing.T) {
	t.Parallel()
	_, url := pgtest.Shared(t)
	ctx := context.Background()
	const pid = "grant"
	owner, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: pid})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := owner.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "by the owner"}); err != nil {
		t.Fatal(err)
	}
	call := confirm.Call{SessionID: "s1", Agent: "coder", Tool: "record_memory", Args: []byte(`{"key":"k"}`)}
	res, err := owner.Confirmations().Check(ctx, call)
	if err != nil || res.Entry == nil {
		t.Fatalf("check: %+v %v", res, err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Roles are the cluster's: one named after this test's database.
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	role := "decisions_" + strings.TrimPrefix(u.Path, "/")
	if _, err := conn.Exec(ctx, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	if err := owner.GrantDecisions(ctx, "no_such_role"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("grant to a missing role = %v", err)
	}
	if only, err := owner.WritesOnlyDecisions(ctx); err != nil || only {
		t.Fatalf("the owner writes only decisions = %t, %v", only, err)
	}
	if err := owner.GrantDecisions(ctx, role); err != nil {
		t.Fatal(err)
	}
	dash, err := pgstore.Open(ctx, asRole(url, role), pgstore.Options{ProjectID: pid, RetryFor: time.Second})
	if err != nil {
		t.Fatalf("open as the decisions role: %v", err)
	}
	defer dash.Close()
	if only, err := dash.WritesOnlyDecisions(ctx); err != nil || !only {
		t.Fatalf("the decisions role writes only decisions = %t, %v", only, err)
	}
	// It reads what the dashboard shows and decides.
	var msgs []string
	if _, err := dash.Timeline().Each(ctx, func(e store.TimelineEntry) error { msgs = append(msgs, e.Message); return nil }); err != nil || !slices.Equal(msgs, []string{"by the owner"}) {
		t.Fatalf("timeline read as the decisions role: %v %v", msgs, err)
	}
	if _, err := dash.Confirmations().List(ctx); err != nil {
		t.Fatal(err)
	}
	if e, err := dash.Confirmations().Decide(ctx, res.Entry.ID, true); err != nil || e.Decision != confirm.Approved {
		t.Fatalf("decide as the decisions role: %+v %v", e, err)
	}
	if res, err := owner.Confirmations().Take(ctx, call); err != nil || res.Verdict != confirm.Run {
		t.Fatalf("the approved call after the role's decision: %+v %v", res, err)
	}
	// Every other write is the database's to refuse.
	refused := func(what string, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("%s as the decisions role = %v, want the database's permission denied", what, err)
		}
	}
	_, err = dash.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "by the dashboard"})
	refused("timeline append", err)
	refused("event", dash.Events().Emit(ctx, store.Event{Kind: "x.y"}))
	_, err = dash.Bugs().Open(ctx, bugs.NewBug{Title: "t", UnitID: "u", Severity: "minor", Evidence: bugs.Evidence{Test: "x"}, By: "pm", At: time.Now()})
	refused("bug open", err)
	refused("agent state", dash.Agents().UpdateRuntime(ctx, "pm", func(s *store.RuntimeState, _ bool) error { s.Phase = "x"; return nil }))
	refused("audit trail", dash.Audit().Open())
	if _, err := conn.Exec(ctx, `SET ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `DELETE FROM audit`)
	refused("deleting the audit trail", err)
}

// TestTablesListed: the tables GrantDecisions covers are the tables the
// migrations make, no more and no fewer.
func TestTablesListed(t *testing.T) {
	t.Parallel()
	_, url := pgtest.Shared(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	if err != nil {
		t.Fatal(err)
	}
	made, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	listed := slices.Sorted(slices.Values(pgstore.Tables()))
	if !slices.Equal(made, listed) {
		t.Fatalf("the migrations make %v; GrantDecisions covers %v", made, listed)
	}
}
