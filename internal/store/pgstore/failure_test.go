package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// TestUnreachableAtStart: a database that is not there is a clear error at
// once, naming the address.
func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	_, err := pgstore.Open(context.Background(), "postgres://toolhost@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", pgstore.Options{ProjectID: "p"})
	var ce *pgstore.ConnectError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "127.0.0.1:1/none") {
		t.Fatalf("Open = %v, want a ConnectError naming 127.0.0.1:1/none", err)
	}
	if _, err := pgstore.Open(context.Background(), "postgres://x@127.0.0.1:1/db", pgstore.Options{}); err == nil || !strings.Contains(err.Error(), "--pid") {
		t.Fatalf("Open without a project id = %v, want one naming --pid", err)
	}
}

// TestDatabaseRestart: while the database is down a write fails with the
// retryable unavailable error (fault.Unavailable, a message that names the
// store and not the driver), an audit row waits in memory; once the
// database is back the same store writes again, the waiting row lands in
// order, and the chain verifies.
func TestDatabaseRestart(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	url := c.CreateDB(t, "restart")
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: "p", RetryFor: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(id string) error {
		return s.Audit().Write(&audit.Row{TS: time.Now().UTC(), CallID: id, Agent: "pm", Tool: "echo", Status: audit.StatusOK})
	}
	if err := write("before"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "before", CallID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "down", CallID: "c2"})
	var rej fault.Rejection
	if !store.IsUnavailable(err) || !errors.As(err, &rej) || rej.RejectionKind() != fault.Unavailable || strings.Contains(err.Error(), "dial") {
		t.Fatalf("append while down = %v, want the store's unavailable error", err)
	}
	var de *audit.DeferredError
	if err := write("while-down"); !errors.As(err, &de) {
		t.Fatalf("audit row while down = %v, want it kept for later", err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = s.Timeline().Append(ctx, store.TimelineEntry{Kind: "k", Message: "back", CallID: "c3"})
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("append after the restart: %v", err)
	}
	if err := write("after"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if _, err := s.Audit().EachLine(ctx, audit.Filter{}, func(r *audit.Row, _ []byte) error { ids = append(ids, r.CallID); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, " ") != "before while-down after" {
		t.Fatalf("rows %v, want before while-down after: one lost, doubled or out of order", ids)
	}
	v, err := s.Audit().Verify(ctx)
	if err != nil || v.Problem != nil {
		t.Fatalf("verify %+v %v", v, err)
	}
	var msgs []string
	if _, err := s.Timeline().Each(ctx, func(e store.TimelineEntry) error { msgs = append(msgs, e.Message); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(msgs, " ") != "before back" {
		t.Fatalf("timeline %v, want before back (the failed append told so and wrote nothing)", msgs)
	}
}

// TestRetryAfterLostAnswerStoresOnce: the same entry of the same call
// appended again (a retry after an answer that never came) is stored
// once and gets the seq first given.
func TestRetryAfterLostAnswerStoresOnce(t *testing.T) {
	t.Parallel()
	_, url := pgtest.Shared(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: "retry"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := store.TimelineEntry{Kind: "k", Message: "once", CallID: "call-1", Data: map[string]any{"a": 1.0}}
	a, err := s.Timeline().Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Timeline().Append(ctx, e)
	if err != nil || b != a {
		t.Fatalf("retry got seq %d (%v), want %d again", b, err, a)
	}
	e.Nth = 1
	if c, err := s.Timeline().Append(ctx, e); err != nil || c == a {
		t.Fatalf("the call's second entry got seq %d (%v): it is another entry", c, err)
	}
}
