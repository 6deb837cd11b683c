package docs

import (
	"context"
	"path"
	"strings"

	"golang.org/x/net/html"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// WriteChapterInput replaces the article of one chapter.
type WriteChapterInput struct {
	Site      string `json:"site" jsonschema:"enum=prd,enum=sdd" jsonschema_description:"which site: prd (PM) or sdd (Architect)"`
	ChapterID string `json:"chapter_id" jsonschema:"pattern=^[a-z0-9][a-z0-9-]{0\\,63}$" jsonschema_description:"id of a chapter listed in the site's site.json"`
	HTML      string `json:"html" jsonschema:"maxLength=2097152" jsonschema_description:"the article body: HTML whose top-level <section>s are the units; give a section data-unit=\"id\" to keep its id when its heading changes. <script>, <iframe>, on* attributes and javascript: URLs are removed. In the SDD, data-prd-ref=\"<prd page>#<unit>\" on an element links it to a PRD unit"`
}

// WriteOutput is the result of write_chapter and write_mvcp_page.
type WriteOutput struct {
	tool.Status
	Path     string   `json:"path,omitempty" jsonschema_description:"project-relative path of the page written"`
	Version  int      `json:"version,omitempty" jsonschema_description:"version number of the new content: the previous content is archived as version-1"`
	Units    []Unit   `json:"units,omitempty" jsonschema_description:"the page's units in order"`
	Removed  []string `json:"removed,omitempty" jsonschema_description:"what the sanitiser removed, and where"`
	Notes    []string `json:"notes,omitempty" jsonschema_description:"unit ids that were normalised or made unique"`
	Archived int      `json:"archived,omitempty" jsonschema_description:"archive version holding the previous content (0 when the page is new)"`
}

// WriteChapter is the write_chapter tool.
func WriteChapter() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "write_chapter",
		Title: "Write chapter",
		Description: "Replace the article of a chapter page (<site>/<chapter_id>.html) with sanitised HTML. The previous page is archived first (archive_doc). " +
			"Every top-level <section> becomes a unit with a stable data-unit (kept if given, else the slug of its heading, made unique). " +
			"Returns the units and anything the sanitiser removed. Run update_search_index afterwards.",
		Effect:     tool.Destructive,
		Idempotent: true,
	}, writeChapter)
}

func writeChapter(_ context.Context, c *callctx.Ctx, in WriteChapterInput) (WriteOutput, error) {
	rel := path.Join(in.Site, in.ChapterID+".html")
	// Refuse before reading anything when this agent may not write here.
	if _, err := c.Files.CheckWrite(rel); err != nil {
		return WriteOutput{}, err
	}
	unlock, err := c.Files.Lock(in.Site + "-site")
	if err != nil {
		return WriteOutput{}, err
	}
	defer unlock()
	s, err := loadSite(c.Files, in.Site)
	if err != nil {
		return WriteOutput{}, err
	}
	p, _ := s.chapter(in.ChapterID)
	if p == nil {
		return WriteOutput{}, tool.Fail("chapter %q is not in %s/site.json (chapters: %s); use one of those ids, or add the chapter with bootstrap_%s_site overwrite=true", in.ChapterID, in.Site, chapterIDs(s), in.Site)
	}
	return writePage(c, s, *p, in.HTML)
}

// writePage sanitises body, assigns units, archives the old page and writes
// the new one.
func writePage(c *callctx.Ctx, s *Site, p Page, body string) (WriteOutput, error) {
	rel := path.Join(s.Kind, p.Page)
	nodes, err := parseFragment(body)
	if err != nil {
		return WriteOutput{}, tool.Fail("html could not be parsed: %v", err)
	}
	nodes, removed := sanitize(nodes)
	holder := &html.Node{Type: html.ElementNode, Data: "article"}
	for _, n := range nodes {
		holder.AppendChild(n)
	}
	units, notes := assignUnits(holder)
	page, err := renderPage(s, p, holder)
	if err != nil {
		return WriteOutput{}, err
	}
	out := WriteOutput{Status: tool.Status{OK: true}, Path: rel, Units: units, Removed: removed, Notes: notes, Version: 1}
	old, err := c.Files.ReadFile(rel)
	switch {
	case err == nil:
		v, _, err := archive(c, rel, old)
		if err != nil {
			return WriteOutput{}, err
		}
		out.Archived, out.Version = v, v+1
	case !notFound(err):
		return WriteOutput{}, err
	}
	if err := c.Files.WriteFile(rel, page); err != nil {
		return WriteOutput{}, err
	}
	if err := c.Emit("doc.write", map[string]any{"path": rel, "version": out.Version, "units": len(units), "removed": len(removed)}); err != nil {
		return WriteOutput{}, err
	}
	return out, nil
}

func chapterIDs(s *Site) string {
	ids := make([]string, len(s.Chapters))
	for i, ch := range s.Chapters {
		ids[i] = ch.ID
	}
	return strings.Join(ids, ", ")
}

// WriteMVCPInput writes one prototype page.
type WriteMVCPInput struct {
	Name  string `json:"name" jsonschema:"pattern=^[a-z0-9][a-z0-9-]{0\\,63}$" jsonschema_description:"prototype name: the page is prd/mvcp/<name>.html"`
	Title string `json:"title,omitempty" jsonschema:"maxLength=200" jsonschema_description:"title shown in the sidebar and the page heading; defaults to the name (or the title it had)"`
	HTML  string `json:"html" jsonschema:"maxLength=2097152" jsonschema_description:"the prototype's body HTML; sanitised and split into units like a chapter"`
}

// WriteMVCPPage is the write_mvcp_page tool.
func WriteMVCPPage() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "write_mvcp_page",
		Title: "Write prototype page",
		Description: "Write a clickable prototype page prd/mvcp/<name>.html inside the PRD site shell (listed under Prototypes in the sidebar and on the index). " +
			"The previous page is archived first; HTML is sanitised and split into units like write_chapter.",
		Effect:     tool.Destructive,
		Idempotent: true,
	}, writeMVCP)
}

func writeMVCP(_ context.Context, c *callctx.Ctx, in WriteMVCPInput) (WriteOutput, error) {
	const dir = "prd"
	p := Page{ID: in.Name, Title: in.Title, Page: "mvcp/" + in.Name + ".html"}
	if _, err := c.Files.CheckWrite(path.Join(dir, p.Page)); err != nil {
		return WriteOutput{}, err
	}
	unlock, err := c.Files.Lock(dir + "-site")
	if err != nil {
		return WriteOutput{}, err
	}
	defer unlock()
	s, err := loadSite(c.Files, dir)
	if err != nil {
		return WriteOutput{}, err
	}
	listed := -1
	for i, q := range s.Prototypes {
		if q.ID == in.Name {
			listed = i
		}
	}
	switch {
	case listed < 0:
		if p.Title == "" {
			p.Title = in.Name
		}
		s.Prototypes = append(s.Prototypes, p)
	case p.Title == "":
		p.Title = s.Prototypes[listed].Title
	default:
		s.Prototypes[listed].Title = p.Title
	}
	out, err := writePage(c, s, p, in.HTML)
	if err != nil {
		return WriteOutput{}, err
	}
	// The index and the sidebar data list prototypes, so they follow.
	if err := writeSiteData(c.Files, dir, s); err != nil {
		return WriteOutput{}, err
	}
	idx, err := renderIndex(s)
	if err != nil {
		return WriteOutput{}, err
	}
	return out, c.Files.WriteFile(path.Join(dir, indexPage), idx)
}
