package docs

import (
	"context"
	"path"
	"strings"

	"golang.org/x/net/html"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
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
	Version  int      `json:"version,omitempty" jsonschema_description:"archived version that holds the content written now (archive/<path>/v<version>.html), so a later hand edit shows in diff_html"`
	Units    []Unit   `json:"units,omitempty" jsonschema_description:"the page's units in order"`
	Removed  []string `json:"removed,omitempty" jsonschema_description:"what the sanitiser removed, and where"`
	Notes    []string `json:"notes,omitempty" jsonschema_description:"unit ids that were normalised or made unique"`
	Archived int      `json:"archived,omitempty" jsonschema_description:"archived version holding the previous content (0 when the page is new)"`
}

// WriteChapter is the write_chapter tool.
func WriteChapter() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "write_chapter",
		Title: "Write chapter",
		Description: "Replace the article of a chapter page (<site>/<chapter_id>.html) with sanitised HTML. The previous page and the new one are both archived (archive_doc), so diff_html shows this change now and a later hand edit after it. " +
			"Every top-level <section> becomes a unit with a stable data-unit (kept if given, else the slug of its heading, made unique). " +
			"Returns the units and anything the sanitiser removed. Run update_search_index afterwards.",
		Effect:     tool.Destructive,
		Idempotent: true,
	}, writeChapter)
}

func writeChapter(ctx context.Context, c *callctx.Ctx, in WriteChapterInput) (WriteOutput, error) {
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
		return WriteOutput{}, tool.Fail(nil, "chapter %q is not in %s/site.json (chapters: %s); use one of those ids, or add the chapter with bootstrap_%s_site overwrite=true", in.ChapterID, in.Site, chapterIDs(s), in.Site)
	}
	return writePage(ctx, c, s, *p, in.HTML, nil)
}

// writePage sanitises body, assigns units, and writes the new page with its
// archive (the old content and the new one, each unless the newest archived
// version already holds it) and the extra files the caller adds, all in one
// batch through the door, the page last: an agent that may not write one of
// them changes none of them, and is told about the page.
func writePage(ctx context.Context, c *callctx.Ctx, s *Site, p Page, body string, extra func() ([]sandbox.File, error)) (WriteOutput, error) {
	rel := path.Join(s.Kind, p.Page)
	nodes, err := parseFragment(body)
	if err != nil {
		return WriteOutput{}, tool.Fail(fault.Content(err), "html could not be parsed")
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
	out := WriteOutput{Status: tool.Status{OK: true}, Path: rel, Units: units, Removed: removed, Notes: notes}
	unlock, err := lockVersions(c, rel)
	if err != nil {
		return WriteOutput{}, err
	}
	defer unlock()
	contents := [][]byte{page}
	old, err := c.Files.ReadFile(rel)
	switch {
	case err == nil:
		contents = [][]byte{old, page}
	case !notFound(err):
		return WriteOutput{}, err
	}
	plan, err := planArchive(c, rel, contents...)
	if err != nil {
		return WriteOutput{}, err
	}
	out.Version = plan.Versions[len(plan.Versions)-1]
	if len(contents) == 2 {
		out.Archived = plan.Versions[0]
	}
	files := plan.Files
	if extra != nil {
		more, err := extra()
		if err != nil {
			return WriteOutput{}, err
		}
		files = append(files, more...)
	}
	files = append(files, sandbox.File{Path: rel, Data: page})
	if err := c.Files.WriteFiles(files); err != nil {
		return WriteOutput{}, err
	}
	if err := c.Emit(ctx, "doc.write", map[string]any{"path": rel, "version": out.Version, "units": len(units), "removed": len(removed)}); err != nil {
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
			"The previous page and the new one are archived; HTML is sanitised and split into units like write_chapter.",
		Effect:     tool.Destructive,
		Idempotent: true,
	}, writeMVCP)
}

func writeMVCP(ctx context.Context, c *callctx.Ctx, in WriteMVCPInput) (WriteOutput, error) {
	const dir = "prd"
	p := Page{ID: in.Name, Title: in.Title, Page: "mvcp/" + in.Name + ".html"}
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
	// The index and the sidebar data list prototypes, so they change with
	// the page.
	return writePage(ctx, c, s, p, in.HTML, func() ([]sandbox.File, error) {
		files, err := siteDataFiles(dir, s)
		if err != nil {
			return nil, err
		}
		idx, err := renderIndex(s)
		if err != nil {
			return nil, err
		}
		return append(files, sandbox.File{Path: path.Join(dir, indexPage), Data: idx}), nil
	})
}
