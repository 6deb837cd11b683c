package docs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/sandbox"
)

// goalsV1 is a chapter body used by several tests.
const goalsV1 = `<p>What the todo app must achieve.</p>
<section><h2>Scope</h2><p>Users keep a personal list of todos.</p></section>
<section data-unit="login"><h2>Sign in</h2><p>Users sign in with e-mail and password.</p></section>
<section><h2>Offline</h2><p>The list works without a network.</p></section>`

// golden compares got with testdata/golden/name, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got ---\n%s", name, got)
	}
}

func TestGeneratedSiteGolden(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "overview", "goals")
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": goalsV1})
	mustRun[WriteOutput](t, c, WriteMVCPPage(), map[string]any{"name": "todo-list", "title": "Todo list", "html": `<section><h2>List</h2><ul><li><a href="../goals.html#login">Sign in first</a></li></ul></section>`})
	mustRun[SearchIndexOutput](t, c, UpdateSearchIndex(), map[string]any{"site": "prd"})
	for _, f := range []string{"index.html", "overview.html", "goals.html", "mvcp/todo-list.html", "site.json", "site-data.js", "search-index.json", "search-index.js"} {
		golden(t, "prd/"+f, p.read("prd/"+f))
	}
	for _, f := range []string{"assets/shell.css", "assets/shell.js"} {
		want, _ := templateFS.ReadFile("templates/" + filepath.Base(f))
		if p.read("prd/"+f) != string(want) {
			t.Errorf("prd/%s is not the embedded template", f)
		}
	}
}

func TestSiteHasNoExternalResources(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "overview")
	err := filepath.Walk(p.path("prd"), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		for _, bad := range []string{"http://", "https://", "//fonts.", "@import"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s contains %q: the site must work offline", path, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBootstrapRefusesExistingSiteUnlessOverwrite(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "overview", "goals")
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": goalsV1})
	before := p.read("prd/goals.html")

	args := map[string]any{"title": "Renamed", "chapters": []map[string]string{{"id": "goals", "title": "Goals"}, {"id": "risks", "title": "Risks"}}}
	_, r, err := run[BootstrapOutput](t, c, BootstrapPRDSite(), args)
	if err != nil || !r.Failed || !strings.Contains(r.Reason, "overwrite=true") {
		t.Fatalf("second bootstrap: err=%v failed=%v reason=%q; want ok:false naming overwrite", err, r.Failed, r.Reason)
	}
	if p.read("prd/goals.html") != before {
		t.Fatal("a refused bootstrap changed goals.html")
	}

	args["overwrite"] = true
	out := mustRun[BootstrapOutput](t, c, BootstrapPRDSite(), args)
	if len(out.Kept) != 1 || out.Kept[0] != "goals.html" {
		t.Fatalf("kept = %v, want [goals.html]", out.Kept)
	}
	got := p.read("prd/goals.html")
	if !strings.Contains(got, "Users sign in with e-mail and password.") || !strings.Contains(got, "Renamed") {
		t.Fatalf("overwrite lost the article or kept the old shell:\n%s", got)
	}
	if !strings.Contains(got, `href="risks.html"`) {
		t.Fatal("goals.html has no next link to the new chapter risks")
	}
	if _, err := os.Stat(p.path("prd/risks.html")); err != nil {
		t.Fatal("new chapter page missing after overwrite")
	}
}

// Rebuilding a site keeps its prototypes listed, and a site.json that does
// not decode is rebuilt without them.
func TestBootstrapOverwriteKeepsPrototypes(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "goals")
	mustRun[WriteOutput](t, c, WriteMVCPPage(), map[string]any{"name": "todo-list", "title": "Todo list", "html": `<p>List</p>`})
	args := map[string]any{"title": "Again", "chapters": []map[string]string{{"id": "goals", "title": "Goals"}}, "overwrite": true}
	out := mustRun[BootstrapOutput](t, c, BootstrapPRDSite(), args)
	if !slices.Contains(out.Kept, "mvcp/todo-list.html") || !strings.Contains(p.read("prd/site.json"), `"mvcp/todo-list.html"`) {
		t.Fatalf("overwrite dropped the prototype: kept %v, site.json:\n%s", out.Kept, p.read("prd/site.json"))
	}
	p.write("prd/site.json", "{not json")
	mustRun[BootstrapOutput](t, c, BootstrapPRDSite(), args)
	if strings.Contains(p.read("prd/site.json"), "todo-list") {
		t.Fatalf("a site.json that does not decode still gave its prototypes:\n%s", p.read("prd/site.json"))
	}
}

func TestBootstrapRejectsBadChapters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		chapters []map[string]string
		want     string
	}{
		{"duplicate id", []map[string]string{{"id": "a", "title": "A"}, {"id": "a", "title": "B"}}, `"a" is used twice`},
		{"reserved index", []map[string]string{{"id": "index", "title": "Home"}}, `"index" is reserved`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			_, r, err := run[BootstrapOutput](t, p.ctx("pm"), BootstrapPRDSite(), map[string]any{"title": "T", "chapters": tc.chapters})
			if err != nil || !r.Failed || !strings.Contains(r.Reason, tc.want) {
				t.Fatalf("err=%v reason=%q, want ok:false containing %q", err, r.Reason, tc.want)
			}
			if _, err := os.Stat(p.path("prd")); !os.IsNotExist(err) {
				t.Fatal("a refused bootstrap created prd/")
			}
		})
	}
}

// Both refusals come from configs/agents.json through the sandbox door: the
// PM may not write the SDD, the Architect may not write the PRD.
func TestSitesAreOwnedByTheirAgent(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	pm, arch := p.ctx("pm"), p.ctx("architect")
	bootstrapPRD(t, pm, "goals")
	mustRun[BootstrapOutput](t, arch, BootstrapSDDSite(), map[string]any{"title": "SDD", "chapters": []map[string]string{{"id": "design", "title": "Design"}}})
	prdBefore, sddBefore := p.read("prd/goals.html"), p.read("sdd/design.html")

	cases := []struct {
		name  string
		agent string
		call  func() error
		path  string
	}{
		{"pm writes an SDD chapter", "devloop-pm", func() error {
			_, _, err := run[WriteOutput](t, pm, WriteChapter(), map[string]any{"site": "sdd", "chapter_id": "design", "html": "<p>x</p>"})
			return err
		}, "sdd/design.html"},
		{"architect writes a PRD chapter", "devloop-architect", func() error {
			_, _, err := run[WriteOutput](t, arch, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": "<p>x</p>"})
			return err
		}, "prd/goals.html"},
		{"pm bootstraps the SDD", "devloop-pm", func() error {
			_, _, err := run[BootstrapOutput](t, pm, BootstrapSDDSite(), map[string]any{"title": "X", "chapters": []map[string]string{{"id": "x", "title": "X"}}, "overwrite": true})
			return err
		}, "sdd/site.json"},
		{"architect archives a PRD page", "devloop-architect", func() error {
			_, _, err := run[ArchiveOutput](t, arch, ArchiveDoc(), map[string]any{"path": "prd/goals.html"})
			return err
		}, "archive/prd/goals.html/versions.json"},
	}
	for _, tc := range cases {
		err := tc.call()
		var se *sandbox.Error
		if !errors.As(err, &se) || !errors.Is(err, sandbox.ErrEscape) {
			t.Errorf("%s: err = %v, want a sandbox violation", tc.name, err)
			continue
		}
		want := "Sandbox violation: " + tc.agent + " tried to write " + tc.path
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: message %q, want prefix %q", tc.name, err.Error(), want)
		}
	}
	if p.read("prd/goals.html") != prdBefore || p.read("sdd/design.html") != sddBefore {
		t.Fatal("a refused write changed a page")
	}
	if _, err := os.Stat(p.path("archive")); !os.IsNotExist(err) {
		t.Fatal("a refused write left an archive behind")
	}
}

func TestWriteChapterUnknownChapter(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	_, r, err := run[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": "<p>x</p>"})
	if err != nil || !r.Failed || !strings.Contains(r.Reason, "bootstrap_prd_site") {
		t.Fatalf("no site: err=%v reason=%q", err, r.Reason)
	}
	bootstrapPRD(t, c, "overview", "goals")
	_, r, err = run[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "risks", "html": "<p>x</p>"})
	if err != nil || !r.Failed || !strings.Contains(r.Reason, "overview, goals") {
		t.Fatalf("unknown chapter: err=%v reason=%q, want the known ids", err, r.Reason)
	}
}

func TestTitlesAreEscaped(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	title := `<img src=x onerror=alert(1)> & "Q"`
	mustRun[BootstrapOutput](t, c, BootstrapPRDSite(), map[string]any{"title": title, "chapters": []map[string]string{{"id": "a", "title": "</script><script>x()</script>"}}})
	for _, f := range []string{"prd/index.html", "prd/a.html", "prd/site-data.js"} {
		s := p.read(f)
		if strings.Contains(s, "<img src=x") || strings.Contains(s, "<script>x()") {
			t.Errorf("%s contains a title as markup:\n%s", f, s)
		}
	}
	if !strings.Contains(p.read("prd/index.html"), "&lt;img src=x onerror=alert(1)&gt; &amp; &#34;Q&#34;") {
		t.Errorf("index.html does not show the escaped title:\n%s", p.read("prd/index.html"))
	}
}

// Concurrent rewrites of one chapter are serialised: every content, the
// first empty page and each write, is archived exactly once, in order, and
// no version is lost.
func TestConcurrentWritesKeepEveryVersion(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "goals")
	const n = 8
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, r, err := run[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": fmt.Sprintf("<p>writer %d</p>", i)}); err != nil || r.Failed {
				t.Errorf("writer %d: %v %s", i, err, r.Reason)
			}
		}(i)
	}
	wg.Wait()
	var vs Versions
	if err := json.Unmarshal([]byte(p.read("archive/prd/goals.html/versions.json")), &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs.Versions) != n+1 {
		t.Fatalf("%d versions archived, want %d (the empty page and the %d writes)", len(vs.Versions), n+1, n)
	}
	if last := vs.Versions[n]; last.SHA256 != sha256Hex([]byte(p.read("prd/goals.html"))) {
		t.Fatalf("the newest archived version %d is not the page as it is now", last.Version)
	}
	seen := map[string]bool{}
	for i, v := range vs.Versions {
		if v.Version != i+1 || seen[v.SHA256] {
			t.Fatalf("versions[%d] = %+v: out of order or a duplicate", i, v)
		}
		seen[v.SHA256] = true
	}
}
