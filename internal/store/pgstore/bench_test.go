package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// benchStores opens a new project on each store: the file store in a temp
// dir, PostgreSQL over loopback TCP.
func benchStores(b *testing.B) []struct {
	name string
	open func(b *testing.B, pid string, fill func(store.Importer)) store.Store
} {
	_, url := pgtest.Shared(b)
	return []struct {
		name string
		open func(b *testing.B, pid string, fill func(store.Importer)) store.Store
	}{
		{"files", func(b *testing.B, _ string, fill func(store.Importer)) store.Store {
			dir := b.TempDir()
			if fill != nil {
				x, err := filestore.NewExport(dir)
				if err != nil {
					b.Fatal(err)
				}
				fill(x)
			}
			s, err := filestore.Open(dir, filestore.Options{ProjectID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"postgres", func(b *testing.B, pid string, fill func(store.Importer)) store.Store {
			s, err := pgstore.Open(context.Background(), url, pgstore.Options{ProjectID: pid})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			if fill != nil {
				im, err := s.NewImport(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				fill(im)
			}
			return s
		}},
	}
}

// percentiles reports p50 and p99 of the timed operations.
func percentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

var benchRun int

// BenchmarkStoreWrite is what a writing call does to the store —
// timeline_append (Timeline.Append), bug_open (Bugs.Open, a new bug),
// update_todo_item (Agents.UpdateTodolist on a 20-step list) — on the
// file store and on PostgreSQL over loopback, p50 and p99 side by side.
func BenchmarkStoreWrite(b *testing.B) {
	ctx := context.Background()
	for _, st := range benchStores(b) {
		for _, op := range []string{"timeline_append", "bug_open", "update_todo_item"} {
			b.Run(st.name+"/"+op, func(b *testing.B) {
				benchRun++
				s := st.open(b, fmt.Sprintf("bench-w-%d", benchRun), nil)
				if op == "update_todo_item" {
					if err := s.Agents().UpdateTodolist(ctx, "pm", func(tl *store.Todolist, _ bool) error {
						for i := range 20 {
							tl.Items = append(tl.Items, store.TodoItem{ID: fmt.Sprintf("step-%03d", i+1), Status: "todo"})
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
				d := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					t0 := time.Now()
					var err error
					switch op {
					case "timeline_append":
						_, err = s.Timeline().Append(ctx, store.TimelineEntry{TS: time.Now().UTC(), Agent: "pm", CallID: fmt.Sprint("c", i), Kind: "k", Message: "m"})
					case "bug_open":
						_, err = s.Bugs().Open(ctx, bugs.NewBug{Title: fmt.Sprint("bug ", i), Severity: "major", Evidence: bugs.Evidence{Test: "t"}, By: "qa", At: time.Now().UTC()})
					case "update_todo_item":
						err = s.Agents().UpdateTodolist(ctx, "pm", func(tl *store.Todolist, _ bool) error {
							tl.Items[i%20].Status = []string{"doing", "todo"}[i%2]
							return nil
						})
					}
					d = append(d, time.Since(t0))
					if err != nil {
						b.Fatal(err)
					}
				}
				percentiles(b, d)
			})
		}
	}
}

// BenchmarkBugsScale is bug_open (a new bug) and bug_list (the first 20
// open major bugs) with 100 and 10,000 bugs already there, on both
// stores: each should cost about the same at either size.
func BenchmarkBugsScale(b *testing.B) {
	ctx := context.Background()
	for _, st := range benchStores(b) {
		for _, n := range []int{100, 10_000} {
			for _, op := range []string{"bug_open", "bug_list"} {
				b.Run(fmt.Sprintf("%s/%s/%d", st.name, op, n), func(b *testing.B) {
					benchRun++
					s := st.open(b, fmt.Sprintf("bench-s-%d", benchRun), func(im store.Importer) {
						now := time.Now().UTC()
						for i := range n {
							nb := bugs.NewBug{Title: fmt.Sprint("seed ", i), UnitID: []string{"api", "web"}[i%2], Severity: bugs.Severities[i%3],
								Evidence: bugs.Evidence{Test: "t"}, By: "qa", At: now}
							if err := im.Bug(ctx, nb.Bug(bugs.FormatID(i+1))); err != nil {
								b.Fatal(err)
							}
						}
						if err := im.Done(ctx); err != nil {
							b.Fatal(err)
						}
					})
					// The first call of a store builds what it keeps (the file
					// store's index): not what a session pays per call.
					if _, err := s.Bugs().List(ctx, bugs.Query{Limit: 1}); err != nil {
						b.Fatal(err)
					}
					d := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for i := range b.N {
						t0 := time.Now()
						var err error
						if op == "bug_open" {
							_, err = s.Bugs().Open(ctx, bugs.NewBug{Title: fmt.Sprint("new ", i), Severity: "major", Evidence: bugs.Evidence{Test: "t"}, By: "qa", At: time.Now().UTC()})
						} else {
							_, err = s.Bugs().List(ctx, bugs.Query{Status: bugs.StatusOpen, Severity: "major", Limit: 20})
						}
						d = append(d, time.Since(t0))
						if err != nil {
							b.Fatal(err)
						}
					}
					percentiles(b, d)
				})
			}
		}
	}
}
