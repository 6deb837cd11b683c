package docs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// parseDocument parses a whole page.
func parseDocument(b []byte) (*html.Node, error) {
	return html.Parse(bytes.NewReader(b))
}

// parseFragment parses agent HTML as the children of an <article>, the way
// a browser would if it were pasted there.
func parseFragment(src string) ([]*html.Node, error) {
	ctx := &html.Node{Type: html.ElementNode, Data: "article", DataAtom: atom.Article}
	return html.ParseFragment(strings.NewReader(src), ctx)
}

// render serialises a node tree.
func render(n *html.Node) ([]byte, error) {
	var buf bytes.Buffer
	if err := html.Render(&buf, n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

func hasClass(n *html.Node, class string) bool {
	v, _ := attr(n, "class")
	for _, c := range strings.Fields(v) {
		if c == class {
			return true
		}
	}
	return false
}

// find returns the first element in document order for which match is true.
func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, match); f != nil {
			return f
		}
	}
	return nil
}

// walk calls fn on every element below and including n.
func walk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

// articleOf returns the page's <article class="body">.
func articleOf(doc *html.Node) *html.Node {
	return find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Article && hasClass(n, "body") })
}

// sectionsOf returns the top-level <section> children of an article: the units.
func sectionsOf(article *html.Node) []*html.Node {
	var out []*html.Node
	for c := article.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Section {
			out = append(out, c)
		}
	}
	return out
}

// blockElements start a new line in the visible text.
var blockElements = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Header: true,
	atom.Footer: true, atom.Aside: true, atom.Nav: true, atom.H1: true, atom.H2: true,
	atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Li: true, atom.Ul: true,
	atom.Ol: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Tr: true, atom.Td: true,
	atom.Th: true, atom.Table: true, atom.Pre: true, atom.Blockquote: true, atom.Br: true,
	atom.Figure: true, atom.Figcaption: true, atom.Hr: true, atom.Main: true, atom.Form: true,
	atom.Fieldset: true, atom.Legend: true, atom.Details: true, atom.Summary: true,
	atom.Caption: true, atom.Label: true, atom.Button: true,
}

// invisible elements hold no text a reader sees.
var invisible = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Noscript: true,
	atom.Head: true, atom.Title: true,
}

// visibleLines returns the text a reader sees, one line per block, with
// runs of white space collapsed.
func visibleLines(n *html.Node) []string {
	var lines []string
	var cur strings.Builder
	flush := func() {
		if s := strings.Join(strings.Fields(cur.String()), " "); s != "" {
			lines = append(lines, s)
		}
		cur.Reset()
	}
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			cur.WriteString(n.Data)
			return
		case html.ElementNode:
			if invisible[n.DataAtom] {
				return
			}
			if blockElements[n.DataAtom] {
				flush()
				defer flush()
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c)
		}
	}
	visit(n)
	flush()
	return lines
}

// visibleText is visibleLines joined with newlines.
func visibleText(n *html.Node) string { return strings.Join(visibleLines(n), "\n") }

// headingOf returns the text of the first h1–h6 inside n, or "".
func headingOf(n *html.Node) string {
	h := find(n, func(e *html.Node) bool {
		switch e.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			return true
		}
		return false
	})
	if h == nil {
		return ""
	}
	return strings.Join(visibleLines(h), " ")
}

// slug turns a heading into a unit id: lower-case letters and digits (any
// script) joined by single dashes, at most 64 runes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	n := 0
	for _, r := range strings.ToLower(s) {
		if n >= 64 {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
				n++
			}
			b.WriteRune(r)
			n++
			dash = false
		} else {
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// Unit is one top-level section of a page.
type Unit struct {
	ID      string `json:"unit" jsonschema_description:"the section's data-unit"`
	Heading string `json:"heading,omitempty" jsonschema_description:"text of the section's first heading"`
}

// assignUnits gives every top-level section of article a unique data-unit
// (kept when given, else the slug of its heading, else section-N) and an id
// anchor when it has none. It returns the units in order and notes about
// ids it had to change.
func assignUnits(article *html.Node) ([]Unit, []string) {
	var units []Unit
	var notes []string
	used := map[string]bool{}
	// Ids given explicitly are reserved first, so a derived id never steals
	// one that a later section asked for.
	reserved := map[string]bool{}
	secs := sectionsOf(article)
	for _, s := range secs {
		if v, ok := attr(s, "data-unit"); ok && slug(v) != "" {
			reserved[slug(v)] = true
		}
	}
	for i, s := range secs {
		heading := headingOf(s)
		given, hasGiven := attr(s, "data-unit")
		id := slug(given)
		if hasGiven && id != given {
			if id == "" {
				notes = append(notes, fmt.Sprintf("section %d: data-unit %q has no letters or digits; derived one from its heading", i+1, given))
			} else {
				notes = append(notes, fmt.Sprintf("section %d: data-unit %q normalised to %q", i+1, given, id))
			}
		}
		taken := func(id string) bool { return used[id] }
		if id == "" {
			id = slug(heading)
			taken = func(id string) bool { return used[id] || reserved[id] }
		}
		if id == "" {
			id = "section-" + strconv.Itoa(i+1)
		}
		base := id
		for k := 2; taken(id); k++ {
			id = base + "-" + strconv.Itoa(k)
		}
		if id != base {
			notes = append(notes, fmt.Sprintf("section %d: unit id %q already used on this page; renamed to %q", i+1, base, id))
		}
		used[id] = true
		setAttr(s, "data-unit", id)
		if v, ok := attr(s, "id"); !ok || v == "" {
			setAttr(s, "id", id)
		}
		units = append(units, Unit{ID: id, Heading: heading})
	}
	return units, notes
}

// pageUnit is a unit with its visible text, for diffs and the search index.
type pageUnit struct {
	Unit
	Text string
}

// readUnits returns the units of a page as stored. Sections without a
// data-unit get the id assignUnits would give them, so hand-edited pages
// still diff sensibly.
func readUnits(doc *html.Node) ([]pageUnit, bool) {
	article := articleOf(doc)
	if article == nil {
		return nil, false
	}
	units, _ := assignUnits(article)
	secs := sectionsOf(article)
	out := make([]pageUnit, len(units))
	for i, u := range units {
		out[i] = pageUnit{Unit: u, Text: visibleText(secs[i])}
	}
	return out, true
}
