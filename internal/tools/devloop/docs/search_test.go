package docs

import (
	"encoding/json"
	"os"
	"testing"
)

func TestSearchIndexIncremental(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "overview", "goals", "risks")
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": goalsV1})
	upd := func() SearchIndexOutput {
		return mustRun[SearchIndexOutput](t, c, UpdateSearchIndex(), map[string]any{"site": "prd"})
	}
	steps := []struct {
		name   string
		before func()
		want   SearchIndexOutput
	}{
		{"after a write only the written page is parsed", nil, SearchIndexOutput{Pages: 3, Parsed: 1, Reused: 2, Entries: 6, Changed: true}},
		{"nothing changed: nothing parsed, file untouched", nil, SearchIndexOutput{Pages: 3, Parsed: 0, Reused: 3, Entries: 6, Changed: false}},
		{"one page edited", func() {
			mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "risks", "html": `<section><h2>Data loss</h2><p>Sync conflicts.</p></section>`})
		}, SearchIndexOutput{Pages: 3, Parsed: 1, Reused: 2, Entries: 7, Changed: true}},
		{"index deleted: everything parsed again", func() { _ = os.Remove(p.path("prd/search-index.json")) },
			SearchIndexOutput{Pages: 3, Parsed: 3, Reused: 0, Entries: 7, Changed: true}},
	}
	var lastBytes string
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		got := upd()
		got.Status, got.Path = SearchIndexOutput{}.Status, ""
		if got.Pages != s.want.Pages || got.Parsed != s.want.Parsed || got.Reused != s.want.Reused || got.Entries != s.want.Entries || got.Changed != s.want.Changed {
			t.Fatalf("%s: got %+v, want %+v", s.name, got, s.want)
		}
		cur := p.read("prd/search-index.json")
		if !s.want.Changed && cur != lastBytes {
			t.Fatalf("%s: index bytes changed", s.name)
		}
		lastBytes = cur
	}
	var idx SearchIndex
	if err := json.Unmarshal([]byte(lastBytes), &idx); err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Page: "overview.html", Heading: "Overview"},
		{Page: "goals.html", Heading: "Goals", Text: "What the todo app must achieve."},
		{Page: "goals.html", Unit: "scope", Heading: "Scope", Text: "Users keep a personal list of todos."},
		{Page: "goals.html", Unit: "login", Heading: "Sign in", Text: "Users sign in with e-mail and password."},
		{Page: "goals.html", Unit: "offline", Heading: "Offline", Text: "The list works without a network."},
		{Page: "risks.html", Heading: "Risks"},
		{Page: "risks.html", Unit: "data-loss", Heading: "Data loss", Text: "Sync conflicts."},
	}
	if len(idx.Entries) != len(want) {
		t.Fatalf("entries = %+v", idx.Entries)
	}
	for i := range want {
		if idx.Entries[i] != want[i] {
			t.Errorf("entries[%d] = %+v, want %+v", i, idx.Entries[i], want[i])
		}
	}
}

// Two projects built from the same input have byte-identical indexes, even
// though their clocks and archive histories differ.
func TestSearchIndexDeterministic(t *testing.T) {
	t.Parallel()
	build := func(extraWrites int) (string, string) {
		p := newProject(t)
		c := p.ctx("pm")
		bootstrapPRD(t, c, "b-chapter", "a-chapter", "c-chapter")
		for i := 0; i <= extraWrites; i++ {
			for _, id := range []string{"c-chapter", "a-chapter", "b-chapter"} {
				mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": id, "html": goalsV1})
			}
		}
		mustRun[SearchIndexOutput](t, c, UpdateSearchIndex(), map[string]any{"site": "prd"})
		return p.read("prd/search-index.json"), p.read("prd/search-index.js")
	}
	j1, s1 := build(0)
	j2, s2 := build(2)
	if j1 != j2 || s1 != s2 {
		t.Fatal("identical sites gave different index bytes")
	}
}
