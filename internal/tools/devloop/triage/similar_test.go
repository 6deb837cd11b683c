package triage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

func writeBug(t testing.TB, dir string, b bugs.Bug) {
	t.Helper()
	if b.Status == "" {
		b.Status, b.Severity, b.Fingerprint, b.OpenedBy = "open", "minor", "fp-"+b.ID, "tester"
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bugs", b.ID+".json"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFindSimilarRanking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    FindSimilarInput
		first string
	}{
		{"obvious duplicate of a bug", FindSimilarInput{BugID: "BUG-0001"}, "BUG-0007"},
		{"and the other way round", FindSimilarInput{BugID: "BUG-0007"}, "BUG-0001"},
		{"text about the port", FindSimilarInput{Text: "listen EADDRINUSE address already in use 38124"}, "BUG-0002"},
		{"text about a missing package", FindSimilarInput{Text: "cannot load slugify-lite in the import test"}, "BUG-0006"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := copyProject(t)
			out, err := findSimilar(context.Background(), newCtx(t, dir), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Similar) == 0 || out.Similar[0].BugID != tt.first {
				t.Fatalf("ranking %+v, want %s first", out.Similar, tt.first)
			}
			for i, s := range out.Similar {
				if s.BugID == tt.in.BugID {
					t.Errorf("the bug itself is in its results: %+v", s)
				}
				if s.Score <= 0 || s.Score > 1 || i > 0 && s.Score > out.Similar[i-1].Score {
					t.Errorf("scores not ranked in (0,1]: %+v", out.Similar)
				}
			}
			if len(out.Similar) > 5 || out.Index.Bugs != 10 {
				t.Errorf("top_k default or index size wrong: %d results, index %+v", len(out.Similar), out.Index)
			}
			if tt.in.BugID != "" {
				var sum Summary
				readJSON(t, dir, SummaryPath, &sum)
				if e := sum.Bugs[tt.in.BugID]; e == nil || len(e.Similar) == 0 || e.Similar[0].BugID != tt.first {
					t.Errorf("summary entry %+v", e)
				}
			}
		})
	}
}

// The index is cached and rebuilt exactly when a bug file changes.
func TestFindSimilarIndexCache(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	c := newCtx(t, dir)
	search := func(in FindSimilarInput) FindSimilarOutput {
		t.Helper()
		out, err := findSimilar(context.Background(), c, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	q := FindSimilarInput{Text: "todo pagination last page", TopK: 1}
	if out := search(q); !out.Index.Rebuilt || out.Similar[0].BugID != "BUG-0010" {
		t.Fatalf("first search: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(dir, IndexPath)); err != nil {
		t.Fatalf("index not cached: %v", err)
	}
	if out := search(q); out.Index.Rebuilt {
		t.Errorf("unchanged bugs rebuilt the index")
	}
	writeBug(t, dir, bugs.Bug{ID: "BUG-0011", Title: "pagination: last page of todos missing, page 3 empty"})
	out := search(q)
	if !out.Index.Rebuilt || out.Index.Bugs != 11 {
		t.Errorf("a new bug did not rebuild the index: %+v", out.Index)
	}
	// Rewriting a bug (same name, new content) is a change too.
	writeBug(t, dir, bugs.Bug{ID: "BUG-0010", Title: "dark mode toggle forgets its state", UpdatedAt: time.Now()})
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(dir, "bugs", "BUG-0010.json"), later, later); err != nil {
		t.Fatal(err)
	}
	out = search(q)
	if !out.Index.Rebuilt || out.Similar[0].BugID != "BUG-0011" {
		t.Errorf("an edited bug did not rebuild the index: %+v", out)
	}
	// A broken bug file is skipped, not fatal; a corrupt cache is rebuilt.
	if err := os.WriteFile(filepath.Join(dir, "bugs", "BUG-0012.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := search(q); out.Index.Skipped != 1 || out.Index.Bugs != 11 {
		t.Errorf("broken bug: %+v", out.Index)
	}
	if err := os.WriteFile(filepath.Join(dir, IndexPath), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := search(q); !out.Index.Rebuilt || out.Similar[0].BugID != "BUG-0011" {
		t.Errorf("corrupt cache: %+v", out)
	}
}

func TestFindSimilarInputs(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	for _, in := range []FindSimilarInput{{}, {BugID: "BUG-0001", Text: "x"}, {Text: " \n"}} {
		_, err := findSimilar(context.Background(), newCtx(t, dir), in)
		var ve *tool.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%+v: %v", in, err)
		}
	}
	_, err := findSimilar(context.Background(), newCtx(t, dir), FindSimilarInput{BugID: "BUG-0777"})
	if r := failReason(t, err); !strings.Contains(r, "no bug BUG-0777") {
		t.Errorf("reason %q", r)
	}
	out, err := findSimilar(context.Background(), newCtx(t, dir), FindSimilarInput{Text: "zzz qqq unrelated words"})
	if err != nil || !out.OK || len(out.Similar) != 0 {
		t.Errorf("text sharing no term: %+v %v", out, err)
	}
	out, err = findSimilar(context.Background(), newCtx(t, dir), FindSimilarInput{Text: "todo", TopK: 2})
	if err != nil || len(out.Similar) != 2 {
		t.Errorf("top_k 2: %+v %v", out, err)
	}
}

// genBugs writes the n bugs of testutil.BugCorpus to dir/bugs.
func genBugs(b testing.TB, dir string, n int) {
	b.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bugs"), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, bug := range testutil.BugCorpus(n) {
		writeBug(b, dir, bug)
	}
}

// BenchmarkFindSimilar5000 measures a search among 5,000 bugs with the
// index cached (the common case) and a search that rebuilds it.
func BenchmarkFindSimilar5000(b *testing.B) {
	dir := b.TempDir()
	genBugs(b, dir, 5000)
	c := newCtx(b, dir)
	b.Run("cached", func(b *testing.B) {
		if _, err := findSimilar(context.Background(), c, FindSimilarInput{BugID: "BUG-0001"}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			out, err := findSimilar(context.Background(), c, FindSimilarInput{BugID: fmt.Sprintf("BUG-%04d", 1+i%5000), TopK: 10})
			if err != nil || out.Index.Rebuilt || len(out.Similar) == 0 {
				b.Fatalf("%+v %v", out.Index, err)
			}
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			if err := os.Remove(filepath.Join(dir, IndexPath)); err != nil {
				b.Fatal(err)
			}
			out, err := findSimilar(context.Background(), c, FindSimilarInput{Text: "login session times out", TopK: 10})
			if err != nil || !out.Index.Rebuilt {
				b.Fatalf("%+v %v", out.Index, err)
			}
		}
	})
}
