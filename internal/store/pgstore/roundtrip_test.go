package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// fill writes some of everything into s.
func fill(t *testing.T, s store.Store, tag string) {
	t.Helper()
	ctx := context.Background()
	if err := s.Audit().Open(); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		r := &audit.Row{TS: time.Now().UTC(), CallID: fmt.Sprintf("%s-%d", tag, i), Agent: "pm", Tool: "echo",
			Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d,"big":12345678901234567890}`, i)), Status: audit.StatusOK, DurationMS: 1.5}
		if err := s.Audit().Write(r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Timeline().Append(ctx, store.TimelineEntry{TS: time.Now().UTC(), Agent: "pm", CallID: r.CallID, Kind: "k",
			Message: "m " + r.CallID, Data: json.RawMessage(`{"n":12345678901234567890}`)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Events().Emit(ctx, store.Event{TS: time.Now().UTC(), Kind: "e.x", Agent: "pm", CallID: r.CallID}); err != nil {
			t.Fatal(err)
		}
	}
	var second string
	for i := range 3 {
		res, err := s.Bugs().Open(ctx, bugs.NewBug{Title: fmt.Sprint(tag, " bug ", i), Severity: "major", Evidence: bugs.Evidence{Test: "t"}, By: "qa", At: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			second = res.Bug.ID
		}
	}
	if _, _, err := s.Bugs().Transition(ctx, second, bugs.StatusTriaged, "qa", "n", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	if err := s.Agents().UpdateTodolist(ctx, "pm", func(tl *store.Todolist, _ bool) error {
		tl.Agent, tl.Items = "pm", []store.TodoItem{{ID: "step-001", Status: "doing"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Confirmations().Check(ctx, confirm.Call{SessionID: "s", Agent: "pm", Tool: "bash", CallID: "c", Args: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

// snapshot is every record of a store, as stored.
func snapshot(t *testing.T, s store.Store) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	add := func(k string, b []byte) { out[k] = append(append(out[k], b...), '\n') }
	if err := s.Timeline().Lines(ctx, func(l []byte) error { add("timeline", l); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Events().Lines(ctx, func(l []byte) error { add("events", l); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Audit().Lines(ctx, func(f string, l []byte) error { add("audit "+f, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bugs().Each(ctx, func(b *bugs.Bug) error { j, _ := json.Marshal(b); add("bugs", j); return nil }); err != nil {
		t.Fatal(err)
	}
	tl, err := s.Agents().Todolist(ctx, "pm")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(tl)
	add("todo", j)
	es, err := s.Confirmations().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j, _ = json.Marshal(es)
	add("confirmations", j)
	key, err := s.RequestStates().Key(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add("key", key)
	return out
}

func verified(t *testing.T, s store.Store, rows int64) {
	t.Helper()
	v, err := s.Audit().Verify(context.Background())
	if err != nil || v.Problem != nil || v.Rows != rows {
		t.Fatalf("%s: verify %+v, %v; want %d rows, no problem", s.Describe(), v, err, rows)
	}
}

// TestExportImportRoundTrip: a project's files (a trail rotated into
// several files) imported into PostgreSQL and exported back give every
// record byte for byte and a chain that verifies at each step; the
// database goes on appending to the imported chain.
func TestExportImportRoundTrip(t *testing.T) {
	_, url := pgtest.Shared(t)
	ctx := context.Background()
	src := t.TempDir()
	fs, err := filestore.Open(src, filestore.Options{ProjectID: "p", AuditMaxBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, fs, "f")
	want := snapshot(t, fs)
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	fs, _ = filestore.Open(src, filestore.Options{})
	defer fs.Close()
	verified(t, fs, 40)
	if files := len(filesOf(want)); files < 3 {
		t.Fatalf("the trail is in %d files; the test wants a rotated one", files)
	}

	pg, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: "round"})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	im, err := pg.NewImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, fs, im); err != nil {
		t.Fatal(err)
	}
	verified(t, pg, 40)
	if got := snapshot(t, pg); !same(got, want) {
		t.Fatalf("the database holds other records than the files:\n%s", diff(got, want))
	}
	if _, err := pg.NewImport(ctx); err == nil {
		t.Fatal("a second import into a project with state was accepted")
	}

	out := t.TempDir()
	x, err := filestore.NewExport(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, pg, x); err != nil {
		t.Fatal(err)
	}
	back, err := filestore.Open(out, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	verified(t, back, 40)
	if got := snapshot(t, back); !same(got, want) {
		t.Fatalf("the export holds other records than the files:\n%s", diff(got, want))
	}
	for f := range filesOf(want) {
		a, _ := os.ReadFile(filepath.Join(src, f))
		b, _ := os.ReadFile(filepath.Join(out, f))
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs after the round trip", f)
		}
	}
	// The database goes on from the imported chain.
	fill(t, pg, "g")
	verified(t, pg, 80)
}

func filesOf(snap map[string][]byte) map[string]bool {
	out := map[string]bool{}
	for k := range snap {
		if f, ok := cutPrefix(k, "audit "); ok {
			out[f] = true
		}
	}
	return out
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

func same(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func diff(got, want map[string][]byte) string {
	var b bytes.Buffer
	for k, v := range want {
		if !bytes.Equal(v, got[k]) {
			fmt.Fprintf(&b, "%s: got %d bytes, want %d\n  got  %.300q\n  want %.300q\n", k, len(got[k]), len(v), got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "%s: not in the source\n", k)
		}
	}
	return b.String()
}
