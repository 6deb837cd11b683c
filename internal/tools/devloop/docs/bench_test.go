package docs

import (
	"fmt"
	"strings"
	"testing"
)

// chapterBody is a chapter of five units with links to the next chapter.
func chapterBody(i int) string {
	var b strings.Builder
	for s := 0; s < 5; s++ {
		fmt.Fprintf(&b, `<section><h2>Requirement %d.%d</h2><p>The system shall do thing %d of chapter %d, see <a href="ch-%03d.html">the next chapter</a>.</p><ul><li>detail one</li><li>detail two</li></ul></section>`, i, s, s, i, (i+1)%200)
	}
	return b.String()
}

func site200(b *testing.B) *project {
	p := newProject(b)
	c := p.ctx("pm")
	var chs []map[string]string
	for i := 0; i < 200; i++ {
		chs = append(chs, map[string]string{"id": fmt.Sprintf("ch-%03d", i), "title": fmt.Sprintf("Chapter %d", i)})
	}
	mustRun[BootstrapOutput](b, c, BootstrapPRDSite(), map[string]any{"title": "Big PRD", "chapters": chs})
	for i := 0; i < 200; i++ {
		mustRun[WriteOutput](b, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": fmt.Sprintf("ch-%03d", i), "html": chapterBody(i)})
	}
	mustRun[SearchIndexOutput](b, c, UpdateSearchIndex(), map[string]any{"site": "prd"})
	return p
}

// BenchmarkSite200 measures the operations an agent repeats on a
// 200-chapter site: rewriting one chapter, the incremental index update
// after it, a full index rebuild, and a full validation.
func BenchmarkSite200(b *testing.B) {
	p := site200(b)
	c := p.ctx("pm")
	b.Run("write_chapter", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			mustRun[WriteOutput](b, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "ch-100", "html": chapterBody(i)})
		}
	})
	b.Run("update_search_index/one_changed", func(b *testing.B) {
		mustRun[SearchIndexOutput](b, c, UpdateSearchIndex(), map[string]any{"site": "prd"})
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			mustRun[WriteOutput](b, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "ch-050", "html": chapterBody(i)})
			b.StartTimer()
			if o := mustRun[SearchIndexOutput](b, c, UpdateSearchIndex(), map[string]any{"site": "prd"}); o.Parsed != 1 {
				b.Fatalf("parsed %d pages, want 1", o.Parsed)
			}
		}
	})
	b.Run("update_search_index/full", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			p.write("prd/search-index.json", "{}")
			b.StartTimer()
			if o := mustRun[SearchIndexOutput](b, c, UpdateSearchIndex(), map[string]any{"site": "prd"}); o.Parsed != 200 {
				b.Fatalf("parsed %d pages, want 200", o.Parsed)
			}
		}
	})
	b.Run("validate_prd_site", func(b *testing.B) {
		for b.Loop() {
			if o := mustRun[ValidateOutput](b, c, ValidatePRDSite(), map[string]any{}); o.Pages != 201 {
				b.Fatalf("checked %d pages, want 201", o.Pages)
			}
		}
	})
}
