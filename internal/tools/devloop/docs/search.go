package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"path"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

// Entry is one searchable unit.
type Entry struct {
	Page    string `json:"page"`
	Unit    string `json:"unit"`
	Heading string `json:"heading"`
	Text    string `json:"text"`
}

// IndexedPage records the hash of a page as it was indexed, so the next
// update can tell whether the page changed.
type IndexedPage struct {
	Page   string `json:"page"`
	SHA256 string `json:"sha256"`
}

// SearchIndex is <site>/search-index.json. It holds no timestamps, so the
// same pages always give the same bytes.
type SearchIndex struct {
	Pages   []IndexedPage `json:"pages"`
	Entries []Entry       `json:"entries"`
}

// indexStats says what an index update did.
type indexStats struct {
	Pages, Parsed, Reused, Entries int
	Changed                        bool
	Missing                        []string
}

// pageEntries returns the entries of one page: a page entry (its title and
// any text outside the units) and one entry per unit.
func pageEntries(p Page, data []byte) ([]Entry, error) {
	doc, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	article := articleOf(doc)
	if article == nil {
		return []Entry{{Page: p.Page, Heading: p.Title}}, nil
	}
	units, _ := readUnits(doc)
	var outside []string
	for n := article.FirstChild; n != nil; n = n.NextSibling {
		if n.Type != html.ElementNode || n.DataAtom != atom.Section {
			outside = append(outside, visibleLines(n)...)
		}
	}
	out := []Entry{{Page: p.Page, Heading: p.Title, Text: strings.Join(outside, "\n")}}
	for _, u := range units {
		// The heading is its own field; repeating it in text would make
		// every snippet start with it.
		text := strings.TrimPrefix(strings.TrimPrefix(u.Text, u.Heading), "\n")
		if u.Heading == "" {
			text = u.Text
		}
		out = append(out, Entry{Page: p.Page, Unit: u.ID, Heading: u.Heading, Text: text})
	}
	return out, nil
}

// buildIndex computes the index of a site, reusing the entries of pages
// whose hash equals the one recorded in old.
func buildIndex(files callctx.Files, dir string, s *Site, old *SearchIndex) (*SearchIndex, indexStats, error) {
	prior := map[string]string{}
	byPage := map[string][]Entry{}
	if old != nil {
		for _, p := range old.Pages {
			prior[p.Page] = p.SHA256
		}
		for _, e := range old.Entries {
			byPage[e.Page] = append(byPage[e.Page], e)
		}
	}
	idx := &SearchIndex{Pages: []IndexedPage{}, Entries: []Entry{}}
	var st indexStats
	for _, p := range s.pages() {
		data, err := files.ReadFile(path.Join(dir, p.Page))
		if notFound(err) {
			st.Missing = append(st.Missing, p.Page)
			continue
		}
		if err != nil {
			return nil, st, err
		}
		sum := sha256Hex(data)
		idx.Pages = append(idx.Pages, IndexedPage{Page: p.Page, SHA256: sum})
		st.Pages++
		if prior[p.Page] == sum && len(byPage[p.Page]) > 0 {
			idx.Entries = append(idx.Entries, byPage[p.Page]...)
			st.Reused++
			continue
		}
		es, err := pageEntries(p, data)
		if err != nil {
			return nil, st, err
		}
		idx.Entries = append(idx.Entries, es...)
		st.Parsed++
	}
	st.Entries = len(idx.Entries)
	return idx, st, nil
}

// rebuildIndex updates <dir>/search-index.json and its file:// twin
// search-index.js under the index's lock; files are rewritten only when
// their content changes.
func rebuildIndex(files callctx.Files, dir string, s *Site) (indexStats, error) {
	var st indexStats
	rel := path.Join(dir, searchIndexJSON)
	err := files.Update(rel, func(oldBytes []byte) ([]byte, error) {
		var old *SearchIndex
		if oldBytes != nil {
			var o SearchIndex
			// A corrupt index is rebuilt from scratch rather than refused:
			// it holds nothing that the pages do not.
			if json.Unmarshal(oldBytes, &o) == nil {
				old = &o
			}
		}
		idx, stats, err := buildIndex(files, dir, s, old)
		if err != nil {
			return nil, err
		}
		st = stats
		next, err := sandbox.MarshalJSON(idx)
		if err != nil {
			return nil, err
		}
		js, err := jsGlobal("TOOLHOST_SEARCH", idx)
		if err != nil {
			return nil, err
		}
		jsRel := path.Join(dir, searchIndexJS)
		if cur, err := files.ReadFile(jsRel); err != nil || !bytes.Equal(cur, js) {
			if err := files.WriteFile(jsRel, js); err != nil {
				return nil, err
			}
		}
		if bytes.Equal(next, oldBytes) {
			return nil, nil
		}
		st.Changed = true
		return next, nil
	})
	return st, err
}

// SearchIndexInput names the site to index.
type SearchIndexInput struct {
	Site string `json:"site" jsonschema:"enum=prd,enum=sdd" jsonschema_description:"which site: prd or sdd"`
}

// SearchIndexOutput is the result of update_search_index.
type SearchIndexOutput struct {
	tool.Status
	Path    string   `json:"path,omitempty" jsonschema_description:"project-relative path of the index"`
	Pages   int      `json:"pages" jsonschema_description:"pages indexed"`
	Parsed  int      `json:"parsed" jsonschema_description:"pages parsed because they are new or changed"`
	Reused  int      `json:"reused" jsonschema_description:"pages whose hash was unchanged, so their entries were reused"`
	Entries int      `json:"entries" jsonschema_description:"entries in the index"`
	Changed bool     `json:"changed" jsonschema_description:"whether the index file changed"`
	Missing []string `json:"missing,omitempty" jsonschema_description:"pages listed in site.json that do not exist"`
}

// UpdateSearchIndex is the update_search_index tool.
func UpdateSearchIndex() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "update_search_index",
		Title: "Update search index",
		Description: "Rebuild <site>/search-index.json (entries {page, unit, heading, text}, in site order) and search-index.js, which the site's search box uses. " +
			"Incremental: pages whose hash is unchanged are not parsed again. Identical pages give a byte-identical index.",
		Effect:     tool.Destructive,
		Idempotent: true,
	}, updateSearchIndex)
}

func updateSearchIndex(_ context.Context, c *callctx.Ctx, in SearchIndexInput) (SearchIndexOutput, error) {
	s, err := loadSite(c.Files, in.Site)
	if err != nil {
		return SearchIndexOutput{}, err
	}
	st, err := rebuildIndex(c.Files, in.Site, s)
	if err != nil {
		return SearchIndexOutput{}, err
	}
	return SearchIndexOutput{
		Status: tool.Status{OK: true}, Path: path.Join(in.Site, searchIndexJSON), Pages: st.Pages,
		Parsed: st.Parsed, Reused: st.Reused, Entries: st.Entries, Changed: st.Changed, Missing: st.Missing,
	}, nil
}
