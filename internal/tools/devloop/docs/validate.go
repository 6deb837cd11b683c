package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/net/html"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/tool"
)

// Problem is one finding of a validation.
type Problem struct {
	Page   string `json:"page" jsonschema_description:"project-relative path of the page or file concerned"`
	Rule   string `json:"rule" jsonschema_description:"the rule broken, e.g. broken_link, duplicate_id, stale_index"`
	Detail string `json:"detail" jsonschema_description:"what is wrong and what to change"`
}

// ValidateOutput is the result of validate_prd_site and
// validate_sdd_consistency.
type ValidateOutput struct {
	tool.Status
	Pages     int             `json:"pages" jsonschema_description:"pages checked"`
	Errors    []Problem       `json:"errors" page:"1" jsonschema_description:"problems to fix; ok is false when there is any"`
	Warnings  []Problem       `json:"warnings" page:"2" jsonschema_description:"things worth a look that do not make the site wrong"`
	Truncated *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// ValidateInput takes no arguments but the page of a large result.
type ValidateInput struct {
	tool.Page
}

// report collects problems.
type report struct {
	errors, warnings []Problem
}

func (r *report) err(page, rule, format string, args ...any) {
	r.errors = append(r.errors, Problem{Page: page, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

func (r *report) warn(page, rule, format string, args ...any) {
	r.warnings = append(r.warnings, Problem{Page: page, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

func (r *report) output(pages int) ValidateOutput {
	out := ValidateOutput{Status: tool.Status{OK: len(r.errors) == 0}, Pages: pages, Errors: r.errors, Warnings: r.warnings}
	if out.Errors == nil {
		out.Errors = []Problem{}
	}
	if out.Warnings == nil {
		out.Warnings = []Problem{}
	}
	if !out.OK {
		out.Reason = fmt.Sprintf("%d problem(s) found; fix each one listed in errors and validate again", len(r.errors))
	}
	return out
}

// checker validates pages of one project, reading and parsing each page at
// most once.
type checker struct {
	c     *callctx.Ctx
	files callctx.Files
	rep   *report
	pages map[string]*readPage // project-relative path → the page as read
	// broken remembers "page → target" pairs already reported, so a page
	// with many links to one missing file gets one error.
	broken map[string]bool
}

// readPage is a page as the checker read it.
type readPage struct {
	ok   bool // false: unreadable
	data []byte
	doc  *html.Node     // nil: unreadable or unparsable
	ids  map[string]int // the doc's ids, counted on first use
}

// idCounts returns ids(p.doc), walking the page once however many anchors
// point into it.
func (p *readPage) idCounts() map[string]int {
	if p.ids == nil {
		p.ids = ids(p.doc)
	}
	return p.ids
}

func newChecker(c *callctx.Ctx, rep *report) *checker {
	return &checker{c: c, files: c.Files, rep: rep, pages: map[string]*readPage{}, broken: map[string]bool{}}
}

// read returns the page at rel, reading and parsing it on first use.
func (k *checker) read(rel string) *readPage {
	if p, ok := k.pages[rel]; ok {
		return p
	}
	p := &readPage{}
	if b, err := k.files.ReadFile(rel); err == nil {
		p.ok, p.data = true, b
		p.doc, _ = parseDocument(b)
	}
	k.pages[rel] = p
	return p
}

// doc returns the parsed page at rel, or nil when it is missing.
func (k *checker) doc(rel string) *html.Node { return k.read(rel).doc }

// exists reports whether a project-relative file exists.
func (k *checker) exists(rel string) bool {
	_, err := k.files.Stat(rel)
	return err == nil
}

// ids returns every id attribute of a page (and a count per id).
func ids(doc *html.Node) map[string]int {
	m := map[string]int{}
	walk(doc, func(n *html.Node) {
		if v, ok := attr(n, "id"); ok && v != "" {
			m[v]++
		}
		if n.Data == "a" {
			if v, ok := attr(n, "name"); ok && v != "" {
				m[v]++
			}
		}
	})
	return m
}

// checkSite runs the rules every site shares and returns the site (nil when
// site.json is unusable) and the number of pages checked.
func (k *checker) checkSite(dir string) (*Site, int) {
	s, err := loadSite(k.files, dir)
	if err != nil {
		k.rep.err(path.Join(dir, siteJSON), "missing_page", "%s", tool.Explain(k.c, err))
		return nil, 0
	}
	for _, f := range []string{shellCSS, shellJS, siteDataJS} {
		if !k.exists(path.Join(dir, f)) {
			k.rep.err(path.Join(dir, f), "missing_asset", "%s/%s is missing; run bootstrap_%s_site with overwrite=true to restore the shell", dir, f, dir)
		}
	}
	pages := append([]Page{{ID: "index", Title: s.Title, Page: indexPage}}, s.pages()...)
	checked := 0
	for _, p := range pages {
		rel := path.Join(dir, p.Page)
		doc := k.doc(rel)
		if doc == nil {
			k.rep.err(rel, "missing_page", "%s is listed in %s/site.json but does not exist; write it with write_chapter or rebuild the site", p.Page, dir)
			continue
		}
		checked++
		k.checkPage(rel, doc, p.ID != "index")
	}
	k.checkIndex(dir, s)
	return s, checked
}

// checkPage runs the per-page rules.
func (k *checker) checkPage(rel string, doc *html.Node, chapter bool) {
	idCount := k.read(rel).idCounts()
	for _, id := range slices.Sorted(maps.Keys(idCount)) {
		if n := idCount[id]; n > 1 {
			k.rep.err(rel, "duplicate_id", "id %q is used %d times; ids must be unique on a page so anchors work", id, n)
		}
	}
	if chapter {
		article := articleOf(doc)
		if article == nil {
			k.rep.err(rel, "missing_article", "the page has no <article class=\"body\">; rebuild the shell with bootstrap overwrite=true")
		} else {
			units := map[string]int{}
			secs := sectionsOf(article)
			for i, s := range secs {
				u, ok := attr(s, "data-unit")
				if !ok || u == "" {
					h := headingOf(s)
					k.rep.err(rel, "section_without_unit", "top-level section %d (%q) has no data-unit; rewrite the chapter with write_chapter, which assigns one", i+1, h)
					continue
				}
				units[u]++
			}
			for _, u := range slices.Sorted(maps.Keys(units)) {
				if n := units[u]; n > 1 {
					k.rep.err(rel, "duplicate_unit", "data-unit %q is used by %d sections; give each section its own", u, n)
				}
			}
			if len(visibleLines(article)) == 0 {
				k.rep.warn(rel, "empty_page", "the article is empty; fill it with write_chapter")
			}
		}
	}
	walk(doc, func(n *html.Node) {
		for _, key := range []string{"href", "src"} {
			if v, ok := attr(n, key); ok {
				k.checkLink(rel, n, key, v)
			}
		}
	})
}

// checkLink checks one href/src of page rel.
func (k *checker) checkLink(rel string, n *html.Node, key, raw string) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		k.rep.err(rel, "broken_link", "<%s %s=%q> is not a valid URL: %v", n.Data, key, raw, err)
		return
	}
	if u.Scheme != "" || u.Host != "" {
		if (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "") && (key == "src" || n.Data == "link") {
			k.rep.warn(rel, "external_resource", "<%s %s=%q> loads from the network; the site must work offline, so copy the resource into the site", n.Data, key, raw)
		}
		return
	}
	target := rel
	if u.Path != "" {
		target = path.Join(path.Dir(rel), u.Path)
		if !k.exists(target) {
			if !k.broken[rel+" "+target] {
				k.broken[rel+" "+target] = true
				k.rep.err(rel, "broken_link", "<%s %s=%q> points to %s, which does not exist; fix the link or create the page", n.Data, key, raw, target)
			}
			return
		}
	}
	if u.Fragment == "" || !strings.HasSuffix(target, ".html") {
		return
	}
	page := k.read(target)
	if page.doc == nil {
		return
	}
	if page.idCounts()[u.Fragment] == 0 {
		k.rep.err(rel, "broken_anchor", "<%s %s=%q>: %s has no element with id %q", n.Data, key, raw, target, u.Fragment)
	}
}

// checkIndex reports a search index that no longer matches the pages.
func (k *checker) checkIndex(dir string, s *Site) {
	rel := path.Join(dir, searchIndexJSON)
	fix := fmt.Sprintf("run update_search_index with site=%s", dir)
	b, err := k.files.ReadFile(rel)
	if err != nil {
		k.rep.err(rel, "stale_index", "the search index is missing; %s", fix)
		return
	}
	var idx SearchIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		k.rep.err(rel, "stale_index", "the search index is not valid JSON (%s); %s", tool.Explain(k.c, fault.Content(err)), fix)
		return
	}
	recorded := map[string]string{}
	for _, p := range idx.Pages {
		recorded[p.Page] = p.SHA256
	}
	var stale []string
	for _, p := range s.pages() {
		page := k.read(path.Join(dir, p.Page))
		if !page.ok {
			delete(recorded, p.Page)
			continue // reported as missing_page
		}
		if recorded[p.Page] != sha256Hex(page.data) {
			stale = append(stale, p.Page)
		}
		delete(recorded, p.Page)
	}
	for p := range recorded {
		stale = append(stale, p+" (no longer in the site)")
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		k.rep.err(rel, "stale_index", "the index does not match %s; %s", strings.Join(stale, ", "), fix)
		return
	}
	js, err := jsGlobal("TOOLHOST_SEARCH", &idx)
	if err != nil {
		return
	}
	if cur, err := k.files.ReadFile(path.Join(dir, searchIndexJS)); err != nil || !bytes.Equal(cur, js) {
		k.rep.err(path.Join(dir, searchIndexJS), "stale_index", "search-index.js does not match search-index.json, so the search box shows old results; %s", fix)
	}
}

// ValidatePRDSite is the validate_prd_site tool.
func ValidatePRDSite() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "validate_prd_site",
		Title: "Validate PRD site",
		Description: "Check the PRD site under prd/: pages listed in site.json exist, internal links and #anchors resolve, ids are unique, every top-level section has a data-unit, " +
			"the assets exist and the search index matches the pages. Returns {ok, errors:[{page, rule, detail}], warnings}.",
		Effect: tool.ReadOnly,
	}, func(_ context.Context, c *callctx.Ctx, _ ValidateInput) (ValidateOutput, error) {
		rep := &report{}
		_, n := newChecker(c, rep).checkSite("prd")
		return rep.output(n), nil
	})
}

// ValidateSDDConsistency is the validate_sdd_consistency tool.
func ValidateSDDConsistency() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "validate_sdd_consistency",
		Title: "Validate SDD consistency",
		Description: "Check the SDD site under sdd/ with the same rules as validate_prd_site, and its consistency with the PRD and the contracts: every unit of a PRD chapter is referenced by some " +
			"data-prd-ref=\"<prd page>#<unit>\" in the SDD, every data-prd-ref names an existing PRD unit, every contracts/<name>.json is referenced (data-contract=\"<name>\" or a link to the file), " +
			"and no contract's hash changed since hash_contract recorded it. Returns {ok, errors:[{page, rule, detail}], warnings}.",
		Effect: tool.ReadOnly,
	}, validateSDD)
}

func validateSDD(_ context.Context, c *callctx.Ctx, _ ValidateInput) (ValidateOutput, error) {
	rep := &report{}
	k := newChecker(c, rep)
	sdd, n := k.checkSite("sdd")
	if sdd == nil {
		return rep.output(n), nil
	}
	var sddPages []string
	for _, p := range append([]Page{{Page: indexPage}}, sdd.pages()...) {
		if k.doc(path.Join("sdd", p.Page)) != nil {
			sddPages = append(sddPages, path.Join("sdd", p.Page))
		}
	}
	k.checkPRDRefs(sddPages)
	k.checkContracts(sddPages)
	return rep.output(n), nil
}

// prdRef normalises a data-prd-ref token to "<page>#<unit>" relative to prd/.
func prdRef(tok string) string {
	tok = strings.TrimPrefix(tok, "../")
	return strings.TrimPrefix(tok, "prd/")
}

// checkPRDRefs reports PRD units the SDD never references and references
// to units that do not exist.
func (k *checker) checkPRDRefs(sddPages []string) {
	prd, err := loadSite(k.files, "prd")
	if err != nil {
		k.rep.err("prd/site.json", "missing_prd", "the SDD is checked against the PRD, but %s", tool.Explain(k.c, err))
		return
	}
	var units []prdUnit
	known := map[string]bool{}
	for _, p := range prd.Chapters {
		doc := k.doc(path.Join("prd", p.Page))
		if doc == nil {
			continue
		}
		us, _ := readUnits(doc)
		for _, u := range us {
			units = append(units, prdUnit{p.Page, u.ID, u.Heading})
			known[p.Page+"#"+u.ID] = true
		}
	}
	referenced := map[string]bool{}
	for _, rel := range sddPages {
		walk(k.doc(rel), func(n *html.Node) {
			v, ok := attr(n, "data-prd-ref")
			if !ok {
				return
			}
			for _, tok := range strings.Fields(v) {
				ref := prdRef(tok)
				if !known[ref] {
					k.rep.err(rel, "broken_prd_ref", "data-prd-ref %q names no PRD unit; use <prd page>#<unit>, e.g. %s", tok, exampleRef(units))
					continue
				}
				referenced[ref] = true
			}
		})
	}
	for _, u := range units {
		if !referenced[u.page+"#"+u.unit] {
			k.rep.err(path.Join("prd", u.page), "prd_unit_unreferenced", "PRD unit %s#%s (%q) is not referenced by any data-prd-ref in the SDD; cover it in an SDD section with data-prd-ref=\"%s#%s\"", u.page, u.unit, u.heading, u.page, u.unit)
		}
	}
}

// prdUnit is a unit of a PRD chapter.
type prdUnit struct{ page, unit, heading string }

func exampleRef(units []prdUnit) string {
	if len(units) == 0 {
		return "goals.html#scope"
	}
	return units[0].page + "#" + units[0].unit
}

// checkContracts reports contracts the SDD never references, contracts that
// do not parse, and contracts whose hash changed since it was recorded.
func (k *checker) checkContracts(sddPages []string) {
	entries, err := k.files.ReadDir(contract.Dir)
	if err != nil {
		return // no contracts yet: nothing to reference
	}
	// By contract name: data-contract="todo", or a link to its file.
	referenced := map[string]bool{}
	for _, rel := range sddPages {
		walk(k.doc(rel), func(n *html.Node) {
			if v, ok := attr(n, "data-contract"); ok {
				for _, tok := range strings.Fields(v) {
					name := path.Base(tok)
					for _, ext := range contract.Exts {
						name = strings.TrimSuffix(name, ext)
					}
					referenced[name] = true
				}
			}
			if v, ok := attr(n, "href"); ok {
				if u, err := url.Parse(v); err == nil && u.Scheme == "" && u.Host == "" && u.Path != "" {
					if name := contract.NameOf(path.Join(path.Dir(rel), u.Path)); name != "" {
						referenced[name] = true
					}
				}
			}
		})
	}
	var hashes Hashes
	if b, err := k.files.ReadFile(HashesPath); err == nil {
		if err := json.Unmarshal(b, &hashes); err != nil {
			k.rep.err(HashesPath, "contract_hashes_invalid", "%s is not valid JSON (%s); record the hashes again with hash_contract", HashesPath, tool.Explain(k.c, fault.Content(err)))
		}
	}
	for _, e := range entries {
		rel := contract.Dir + "/" + e.Name()
		name := contract.NameOf(rel)
		if e.IsDir() || name == "" {
			continue
		}
		data, err := k.files.ReadFile(rel)
		if err != nil {
			continue
		}
		ct, err := contract.Load(k.files.ReadFile, rel, data, name)
		if err != nil {
			k.rep.err(rel, "contract_invalid", "%s", tool.Explain(k.c, fault.Content(err)))
			continue
		}
		if !referenced[name] {
			k.rep.err(rel, "contract_unreferenced", "no SDD page references contract %s; add data-contract=%q to the section that specifies it", name, name)
		}
		sum := ct.SHA256
		rec, ok := hashes[rel]
		switch {
		case !ok:
			k.rep.warn(rel, "contract_unhashed", "no hash recorded for %s; run hash_contract path=%s", rel, rel)
		case rec.SHA256 != sum:
			k.rep.err(rel, "contract_hash_changed", "%s changed since its hash was recorded at %s (recorded %s, now %s); review the SDD against the new contract, then run hash_contract path=%s", rel, rec.RecordedAt.Format("2006-01-02T15:04:05Z07:00"), short(rec.SHA256), short(sum), rel)
		}
	}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
