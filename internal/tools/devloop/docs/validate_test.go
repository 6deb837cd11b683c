package docs

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const overviewBody = `<p>The todo app. Start with <a href="goals.html#login">signing in</a>, see <a href="#top-note">the note</a>
or <a href="mvcp/todo-list.html">the prototype</a>.</p><p id="top-note">Draft.</p>`

const todosContract = `{"name": "todos", "version": "1.0.0", "endpoints": [
  {"id": "list", "method": "GET", "path": "/todos", "response": {"type": "array"}, "status": 200}
]}`

// cleanPRD builds a PRD site with no defect.
func cleanPRD(t *testing.T, p *project) {
	t.Helper()
	c := p.ctx("pm")
	bootstrapPRD(t, c, "overview", "goals")
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "overview", "html": overviewBody})
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": goalsV1})
	mustRun[WriteOutput](t, c, WriteMVCPPage(), map[string]any{"name": "todo-list", "html": `<p><a href="../goals.html#scope">Scope</a></p>`})
	mustRun[SearchIndexOutput](t, c, UpdateSearchIndex(), map[string]any{"site": "prd"})
}

// cleanSDD builds an SDD that covers every PRD unit and the one contract.
func cleanSDD(t *testing.T, p *project, design string) {
	t.Helper()
	c := p.ctx("architect")
	mustRun[BootstrapOutput](t, c, BootstrapSDDSite(), map[string]any{"title": "Todo SDD", "chapters": []map[string]string{{"id": "design", "title": "Design"}}})
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "sdd", "chapter_id": "design", "html": design})
	mustRun[SearchIndexOutput](t, c, UpdateSearchIndex(), map[string]any{"site": "sdd"})
	p.write("contracts/todos.json", todosContract)
	mustRun[HashContractOutput](t, c, HashContract(), map[string]any{"path": "contracts/todos.json"})
}

const designBody = `<section data-prd-ref="goals.html#scope"><h2>Storage</h2><p>One table per list.</p></section>
<section data-contract="todos"><h2>API</h2><p data-prd-ref="goals.html#login prd/goals.html#offline">Auth and sync, see <a href="../contracts/todos.json">the contract</a>.</p></section>`

func rules(ps []Problem) []string {
	var r []string
	for _, p := range ps {
		r = append(r, p.Rule+" "+p.Page)
	}
	sort.Strings(r)
	return r
}

func replaceIn(t *testing.T, p *project, rel, old, new string) {
	t.Helper()
	s := p.read(rel)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", rel, old)
	}
	p.write(rel, strings.Replace(s, old, new, 1))
}

func TestValidatePRDSite(t *testing.T) {
	t.Parallel()
	pmWrite := func(chapter, body string) func(*testing.T, *project) {
		return func(t *testing.T, p *project) {
			c := p.ctx("pm")
			mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": chapter, "html": body})
			mustRun[SearchIndexOutput](t, c, UpdateSearchIndex(), map[string]any{"site": "prd"})
		}
	}
	reindex := func(t *testing.T, p *project) {
		mustRun[SearchIndexOutput](t, p.ctx("pm"), UpdateSearchIndex(), map[string]any{"site": "prd"})
	}
	cases := []struct {
		name   string
		seed   func(*testing.T, *project)
		errors []string
		warns  []string
	}{
		{"clean site", func(*testing.T, *project) {}, nil, nil},
		{"missing page", func(t *testing.T, p *project) { _ = os.Remove(p.path("prd/goals.html")) },
			// The index, overview and the prototype link to goals.html.
			[]string{"broken_link prd/index.html", "broken_link prd/mvcp/todo-list.html", "broken_link prd/overview.html", "missing_page prd/goals.html"}, nil},
		{"broken link", pmWrite("overview", `<p><a href="nope.html">x</a></p>`), []string{"broken_link prd/overview.html"}, nil},
		{"broken anchor to another page", pmWrite("overview", `<p><a href="goals.html#nope">x</a></p>`), []string{"broken_anchor prd/overview.html"}, nil},
		{"broken anchor on the same page", pmWrite("overview", `<p><a href="#nope">x</a></p>`), []string{"broken_anchor prd/overview.html"}, nil},
		{"duplicate id", pmWrite("overview", `<p id="x">a</p><p id="x">b</p>`), []string{"duplicate_id prd/overview.html"}, nil},
		{"section without unit", func(t *testing.T, p *project) {
			replaceIn(t, p, "prd/goals.html", `<section data-unit="scope" id="scope">`, `<section id="scope">`)
			reindex(t, p)
		}, []string{"section_without_unit prd/goals.html"}, nil},
		{"duplicate unit", func(t *testing.T, p *project) {
			replaceIn(t, p, "prd/goals.html", `data-unit="offline"`, `data-unit="login"`)
			reindex(t, p)
		}, []string{"duplicate_unit prd/goals.html"}, nil},
		{"stale index after a write", func(t *testing.T, p *project) {
			mustRun[WriteOutput](t, p.ctx("pm"), WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": goalsV1 + "<p>more</p>"})
		}, []string{"stale_index prd/search-index.json"}, nil},
		{"stale search-index.js", func(t *testing.T, p *project) { p.write("prd/search-index.js", "window.TOOLHOST_SEARCH = {};\n") },
			[]string{"stale_index prd/search-index.js"}, nil},
		{"missing asset", func(t *testing.T, p *project) { _ = os.Remove(p.path("prd/assets/shell.js")) },
			[]string{"broken_link prd/goals.html", "broken_link prd/index.html", "broken_link prd/mvcp/todo-list.html", "broken_link prd/overview.html", "missing_asset prd/assets/shell.js"}, nil},
		{"external resource is a warning", pmWrite("overview", `<p><img src="https://cdn.example/x.png" alt="">Logo</p>`), nil, []string{"external_resource prd/overview.html"}},
		{"empty chapter is a warning", pmWrite("overview", ``), nil, []string{"empty_page prd/overview.html"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			cleanPRD(t, p)
			tc.seed(t, p)
			out, r, err := run[ValidateOutput](t, p.ctx("pm"), ValidatePRDSite(), map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if got := rules(out.Errors); !reflect.DeepEqual(got, tc.errors) {
				t.Fatalf("errors = %q, want %q\n%+v", got, tc.errors, out.Errors)
			}
			if got := rules(out.Warnings); !reflect.DeepEqual(got, tc.warns) {
				t.Fatalf("warnings = %q, want %q", got, tc.warns)
			}
			if out.OK != (len(tc.errors) == 0) || r.Failed == out.OK {
				t.Fatalf("ok = %v (failed %v) with %d errors", out.OK, r.Failed, len(out.Errors))
			}
			for _, e := range out.Errors {
				if e.Detail == "" {
					t.Errorf("%s on %s has no detail", e.Rule, e.Page)
				}
			}
		})
	}
}

func TestValidateSDDConsistency(t *testing.T) {
	t.Parallel()
	archWrite := func(body string) func(*testing.T, *project) {
		return func(t *testing.T, p *project) {
			c := p.ctx("architect")
			mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "sdd", "chapter_id": "design", "html": body})
			mustRun[SearchIndexOutput](t, c, UpdateSearchIndex(), map[string]any{"site": "sdd"})
		}
	}
	cases := []struct {
		name   string
		seed   func(*testing.T, *project)
		errors []string
		warns  []string
	}{
		{"clean", func(*testing.T, *project) {}, nil, nil},
		{"PRD unit never referenced", archWrite(strings.Replace(designBody, " prd/goals.html#offline", "", 1)),
			[]string{"prd_unit_unreferenced prd/goals.html"}, nil},
		{"reference to a unit that does not exist", archWrite(strings.Replace(designBody, "goals.html#scope", "goals.html#scope goals.html#nope", 1)),
			[]string{"broken_prd_ref sdd/design.html"}, nil},
		{"contract never referenced", func(t *testing.T, p *project) {
			p.write("contracts/users.json", strings.Replace(todosContract, `"todos"`, `"users"`, 1))
			mustRun[HashContractOutput](t, p.ctx("architect"), HashContract(), map[string]any{"path": "contracts/users.json"})
		}, []string{"contract_unreferenced contracts/users.json"}, nil},
		{"contract changed since hashed", func(t *testing.T, p *project) {
			p.write("contracts/todos.json", strings.Replace(todosContract, "200", "201", 1))
		}, []string{"contract_hash_changed contracts/todos.json"}, nil},
		{"contract reformatted only", func(t *testing.T, p *project) {
			p.write("contracts/todos.json", strings.Join(strings.Fields(todosContract), ""))
		}, nil, nil},
		{"contract never hashed is a warning", func(t *testing.T, p *project) { _ = os.Remove(p.path(HashesPath)) },
			nil, []string{"contract_unhashed contracts/todos.json"}},
		{"invalid contract", func(t *testing.T, p *project) {
			p.write("contracts/broken.json", `{"name": "broken", "endpoints": [{"id": "x"}]}`)
		},
			[]string{"contract_invalid contracts/broken.json"}, nil},
		{"no PRD", func(t *testing.T, p *project) { _ = os.Remove(p.path("prd/site.json")) },
			[]string{"missing_prd prd/site.json"}, nil},
		{"SDD site rules apply too", archWrite(designBody + `<p><a href="nope.html">x</a></p>`),
			[]string{"broken_link sdd/design.html"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			cleanPRD(t, p)
			cleanSDD(t, p, designBody)
			tc.seed(t, p)
			out, _, err := run[ValidateOutput](t, p.ctx("architect"), ValidateSDDConsistency(), map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if got := rules(out.Errors); !reflect.DeepEqual(got, tc.errors) {
				t.Fatalf("errors = %q, want %q\n%+v", got, tc.errors, out.Errors)
			}
			if got := rules(out.Warnings); !reflect.DeepEqual(got, tc.warns) {
				t.Fatalf("warnings = %q, want %q", got, tc.warns)
			}
			if out.OK != (len(tc.errors) == 0) {
				t.Fatalf("ok = %v with errors %+v", out.OK, out.Errors)
			}
		})
	}
}

// One fixture with every defect at once: each is reported.
func TestValidateBrokenFixtureReportsEverything(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	cleanPRD(t, p)
	c := p.ctx("pm")
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "overview",
		"html": `<p id="d">a</p><p id="d">b</p><a href="gone.html">g</a><a href="goals.html#nowhere">n</a>`})
	replaceIn(t, p, "prd/goals.html", `<section data-unit="scope" id="scope">`, `<section id="scope">`)
	_ = os.Remove(p.path("prd/mvcp/todo-list.html"))
	res, r, err := run[ValidateOutput](t, c, ValidatePRDSite(), map[string]any{})
	if err != nil || !r.Failed || res.OK {
		t.Fatalf("broken site validated: err=%v ok=%v", err, res.OK)
	}
	got := map[string]bool{}
	for _, e := range res.Errors {
		got[e.Rule] = true
	}
	for _, want := range []string{"duplicate_id", "broken_link", "broken_anchor", "section_without_unit", "missing_page", "stale_index"} {
		if !got[want] {
			t.Errorf("rule %s not reported: %+v", want, res.Errors)
		}
	}
}
