package docs

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

//go:embed templates
var templateFS embed.FS

// Files of a site, relative to the site directory.
const (
	siteJSON        = "site.json"
	siteDataJS      = "site-data.js"
	searchIndexJSON = "search-index.json"
	searchIndexJS   = "search-index.js"
	indexPage       = "index.html"
	shellCSS        = "assets/shell.css"
	shellJS         = "assets/shell.js"
)

// Page is one page listed in site.json.
type Page struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Page  string `json:"page"`
}

// Site is <site>/site.json: the title and the order of the pages.
type Site struct {
	Kind       string `json:"kind"`
	Title      string `json:"title"`
	Chapters   []Page `json:"chapters"`
	Prototypes []Page `json:"prototypes,omitempty"`
}

// chapter returns the chapter with id, or nil.
func (s *Site) chapter(id string) (*Page, int) {
	for i := range s.Chapters {
		if s.Chapters[i].ID == id {
			return &s.Chapters[i], i
		}
	}
	return nil, -1
}

// pages returns every page of the site except the index, chapters first.
func (s *Site) pages() []Page {
	return append(append([]Page(nil), s.Chapters...), s.Prototypes...)
}

var kindLabels = map[string]string{"prd": "PRD", "sdd": "SDD"}

// loadSite reads <dir>/site.json.
func loadSite(files callctx.Files, dir string) (*Site, error) {
	b, err := files.ReadFile(path.Join(dir, siteJSON))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, tool.Fail(nil, "%s/%s does not exist; create the site with bootstrap_%s_site first", dir, siteJSON, dir)
	}
	if err != nil {
		return nil, err
	}
	var s Site
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, tool.Fail(fault.Content(err), "%s/%s is not valid JSON; recreate the site with bootstrap_%s_site overwrite=true", dir, siteJSON, dir)
	}
	return &s, nil
}

// siteDataFiles are site.json and its file:// twin site-data.js, site.json
// last: a site is there once its site.json is.
func siteDataFiles(dir string, s *Site) ([]sandbox.File, error) {
	b, err := sandbox.MarshalJSON(s)
	if err != nil {
		return nil, err
	}
	js, err := jsGlobal("TOOLHOST_SITE", s)
	if err != nil {
		return nil, err
	}
	return []sandbox.File{{Path: path.Join(dir, siteDataJS), Data: js}, {Path: path.Join(dir, siteJSON), Data: b}}, nil
}

// jsGlobal renders v as a script assigning a window global. Pages load it
// with <script src>, which works under file:// where fetch() does not.
func jsGlobal(name string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return []byte("window." + name + " = " + string(b) + ";\n"), nil
}

// renderPage renders the shell of page p with the children of body (moved,
// not copied) as the article content; a nil body leaves the article empty.
func renderPage(s *Site, p Page, body *html.Node) ([]byte, error) {
	root := strings.Repeat("../", strings.Count(p.Page, "/"))
	doc, err := fillShell("page.html", map[string]string{
		"Kind": s.Kind, "KindLabel": kindLabels[s.Kind], "SiteTitle": s.Title, "Title": p.Title, "Page": p.Page, "Root": root,
	})
	if err != nil {
		return nil, err
	}
	nav := find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Nav && hasClass(n, "prev-next") })
	var prev, next *Page
	if _, i := s.chapter(p.ID); i >= 0 && s.Chapters[i].Page == p.Page {
		if i > 0 {
			prev = &s.Chapters[i-1]
		}
		if i+1 < len(s.Chapters) {
			next = &s.Chapters[i+1]
		}
	}
	if prev != nil {
		nav.AppendChild(link("prev", "prev", root+prev.Page, "← "+prev.Title))
	} else {
		nav.AppendChild(element(atom.Span))
	}
	if next != nil {
		nav.AppendChild(link("next", "next", root+next.Page, next.Title+" →"))
	}
	if body != nil {
		article := articleOf(doc)
		for n := body.FirstChild; n != nil; n = body.FirstChild {
			body.RemoveChild(n)
			article.AppendChild(n)
		}
	}
	return render(doc)
}

// keptArticle returns the <article class="body"> of the page at rel when it
// reads, parses and has content, else nil.
func keptArticle(files callctx.Files, rel string) *html.Node {
	b, err := files.ReadFile(rel)
	if err != nil {
		return nil
	}
	doc, err := parseDocument(b)
	if err != nil {
		return nil
	}
	if a := articleOf(doc); a != nil && a.FirstChild != nil {
		return a
	}
	return nil
}

// renderIndex renders the site's index page: the chapters, the prototypes
// when there are any, and a link to the first chapter.
func renderIndex(s *Site) ([]byte, error) {
	doc, err := fillShell("index.html", map[string]string{"Kind": s.Kind, "KindLabel": kindLabels[s.Kind], "SiteTitle": s.Title})
	if err != nil {
		return nil, err
	}
	list := func(parent *html.Node, items []Page) {
		for _, p := range items {
			li := element(atom.Li)
			li.AppendChild(link("", "", p.Page, p.Title))
			parent.AppendChild(textNode("\n        "))
			parent.AppendChild(li)
		}
		parent.AppendChild(textNode("\n      "))
	}
	contents := find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Nav && hasClass(n, "index") })
	list(find(contents, func(n *html.Node) bool { return n.DataAtom == atom.Ol && hasClass(n, "chapters") }), s.Chapters)
	if len(s.Prototypes) > 0 {
		h := element(atom.H2)
		h.AppendChild(textNode("Prototypes"))
		ul := element(atom.Ul, html.Attribute{Key: "class", Val: "prototypes"})
		list(ul, s.Prototypes)
		contents.InsertBefore(textNode("\n      "), contents.LastChild)
		contents.InsertBefore(h, contents.LastChild)
		contents.InsertBefore(textNode("\n      "), contents.LastChild)
		contents.InsertBefore(ul, contents.LastChild)
	}
	if len(s.Chapters) > 0 {
		nav := element(atom.Nav, html.Attribute{Key: "class", Val: "prev-next"})
		nav.AppendChild(element(atom.Span))
		nav.AppendChild(link("next", "next", s.Chapters[0].Page, s.Chapters[0].Title+" →"))
		contents.Parent.InsertBefore(nav, contents.NextSibling)
		contents.Parent.InsertBefore(textNode("\n    "), nav)
	}
	return render(doc)
}

// ChapterInput names one chapter of a new site.
type ChapterInput struct {
	ID    string `json:"id" jsonschema:"pattern=^[a-z0-9][a-z0-9-]{0\\,63}$" jsonschema_description:"chapter id: lower-case letters, digits and dashes; the page is <id>.html ('index' is reserved)"`
	Title string `json:"title" jsonschema:"minLength=1,maxLength=200" jsonschema_description:"chapter title shown in the sidebar, the page heading and prev/next links"`
}

// BootstrapInput creates a document site.
type BootstrapInput struct {
	Title     string         `json:"title" jsonschema:"minLength=1,maxLength=200" jsonschema_description:"site title"`
	Chapters  []ChapterInput `json:"chapters" jsonschema:"minItems=1,maxItems=1000" jsonschema_description:"the chapters in reading order"`
	Overwrite bool           `json:"overwrite,omitempty" jsonschema_description:"rebuild an existing site: shells, index, assets and site.json are regenerated; the article of every chapter that is still listed is kept"`
}

// BootstrapOutput is the result of bootstrap_prd_site / bootstrap_sdd_site.
type BootstrapOutput struct {
	tool.Status
	Site  string   `json:"site,omitempty" jsonschema_description:"site directory: prd or sdd"`
	Files []string `json:"files,omitempty" jsonschema_description:"project-relative paths written"`
	Kept  []string `json:"kept,omitempty" jsonschema_description:"chapters whose existing article was kept (overwrite)"`
}

// BootstrapPRDSite is the bootstrap_prd_site tool.
func BootstrapPRDSite() tool.Tool { return bootstrapTool("prd", "PRD") }

// BootstrapSDDSite is the bootstrap_sdd_site tool.
func BootstrapSDDSite() tool.Tool { return bootstrapTool("sdd", "SDD") }

func bootstrapTool(dir, label string) tool.Tool {
	return tool.New(tool.Spec{
		Name:  "bootstrap_" + dir + "_site",
		Title: "Bootstrap " + label + " site",
		Description: "Create the " + label + " static site under " + dir + "/ from the built-in templates: index.html with navigation, one <chapter>.html per chapter with an empty <article class=\"body\">, " +
			"assets/shell.css, assets/shell.js (sidebar, prev/next, search), site.json and the search index. Opens from disk and from any static server. " +
			"Refuses to replace an existing site unless overwrite is true. Fill chapters with write_chapter.",
		Effect:     tool.Destructive,
		Idempotent: true,
	}, func(ctx context.Context, c *callctx.Ctx, in BootstrapInput) (BootstrapOutput, error) {
		return bootstrap(ctx, c, dir, in)
	})
}

func bootstrap(ctx context.Context, c *callctx.Ctx, dir string, in BootstrapInput) (BootstrapOutput, error) {
	seen := map[string]bool{}
	for i, ch := range in.Chapters {
		switch {
		case ch.ID == "index":
			return BootstrapOutput{}, tool.Fail(nil, "chapters[%d].id: \"index\" is reserved for the site's index page; choose another id", i)
		case seen[ch.ID]:
			return BootstrapOutput{}, tool.Fail(nil, "chapters[%d].id: %q is used twice; give every chapter its own id", i, ch.ID)
		}
		seen[ch.ID] = true
	}
	// Hold the site lock so two bootstraps (or a bootstrap and a write) do
	// not interleave.
	unlock, err := c.Files.Lock(dir + "-site")
	if err != nil {
		return BootstrapOutput{}, err
	}
	defer unlock()
	oldJSON, readErr := c.Files.ReadFile(path.Join(dir, siteJSON))
	exists := readErr == nil
	if exists && !in.Overwrite {
		return BootstrapOutput{}, tool.Fail(nil, "%s/ already holds a site (%s/%s exists); pass overwrite=true to rebuild it (chapter articles are kept), or edit it with write_chapter", dir, dir, siteJSON)
	}
	s := &Site{Kind: dir, Title: in.Title}
	for _, ch := range in.Chapters {
		s.Chapters = append(s.Chapters, Page{ID: ch.ID, Title: ch.Title, Page: ch.ID + ".html"})
	}
	// The prototypes of the site being rebuilt are kept; a site.json that
	// does not decode keeps none.
	var old Site
	if exists && json.Unmarshal(oldJSON, &old) == nil {
		s.Prototypes = old.Prototypes
	}
	out := BootstrapOutput{Status: tool.Status{OK: true}, Site: dir}
	// The whole site is one batch through the door, site.json last: an agent
	// that may not write the site gets the sandbox's message about it and
	// nothing changes.
	var batch []sandbox.File
	add := func(rel string, data []byte) {
		batch = append(batch, sandbox.File{Path: path.Join(dir, rel), Data: data})
	}
	for _, a := range []string{shellCSS, shellJS} {
		b, err := templateFS.ReadFile("templates/" + path.Base(a))
		if err != nil {
			return BootstrapOutput{}, err
		}
		add(a, b)
	}
	for _, p := range s.pages() {
		var body *html.Node
		if exists {
			if body = keptArticle(c.Files, path.Join(dir, p.Page)); body != nil {
				out.Kept = append(out.Kept, p.Page)
			}
		}
		b, err := renderPage(s, p, body)
		if err != nil {
			return BootstrapOutput{}, err
		}
		add(p.Page, b)
	}
	idx, err := renderIndex(s)
	if err != nil {
		return BootstrapOutput{}, err
	}
	add(indexPage, idx)
	data, err := siteDataFiles(dir, s)
	if err != nil {
		return BootstrapOutput{}, err
	}
	batch = append(batch, data...)
	if err := c.Files.WriteFiles(batch); err != nil {
		return BootstrapOutput{}, err
	}
	for _, f := range batch {
		out.Files = append(out.Files, f.Path)
	}
	if _, err := rebuildIndex(c.Files, dir, s); err != nil {
		return BootstrapOutput{}, err
	}
	out.Files = append(out.Files, path.Join(dir, searchIndexJSON), path.Join(dir, searchIndexJS))
	if err := c.Emit(ctx, "doc.site", map[string]any{"site": dir, "chapters": len(s.Chapters), "overwrite": exists}); err != nil {
		return BootstrapOutput{}, err
	}
	return out, nil
}
