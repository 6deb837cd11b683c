package docs

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// fillShell parses the shell templates/<name> and puts vars into its
// {{Name}} placeholders, which may stand only in text and in attribute
// values. The values go in after parsing, as the data of text nodes and
// attribute values that html.Render escapes, so no value can become markup
// or leave its attribute: the guarantee html/template's contextual escaping
// gives, here by construction, without text/template's reflective method
// lookup (which keeps the linker from dropping unused methods of the whole
// binary). A URL attribute whose value would carry a scheme other than
// http, https or mailto gets html/template's "#ZgotmplZ" instead.
func fillShell(name string, vars map[string]string) (*html.Node, error) {
	b, err := templateFS.ReadFile("templates/" + name)
	if err != nil {
		return nil, err
	}
	doc, err := parseDocument(b)
	if err != nil {
		return nil, err
	}
	var bad error
	var fill func(*html.Node)
	fill = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			fill(c)
		}
		switch n.Type {
		case html.TextNode:
			if p := n.Parent; p != nil && (p.DataAtom == atom.Script || p.DataAtom == atom.Style) && strings.Contains(n.Data, "{{") {
				bad = fmt.Errorf("%s: a placeholder in <%s> text", name, p.Data)
				return
			}
			n.Data = substitute(n.Data, vars, &bad)
		case html.ElementNode:
			for i := range n.Attr {
				a := &n.Attr[i]
				if !strings.Contains(a.Val, "{{") {
					continue
				}
				a.Val = substitute(a.Val, vars, &bad)
				if urlAttr(a.Key) {
					a.Val = safeURL(a.Val)
				}
			}
		}
	}
	fill(doc)
	if bad != nil {
		return nil, bad
	}
	return doc, nil
}

// substitute replaces each {{Name}} in s with vars[Name]; a name vars lacks
// is a template bug, reported through bad.
func substitute(s string, vars map[string]string, bad *error) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			*bad = fmt.Errorf("unclosed placeholder in %q", s)
			return s
		}
		key := s[i+2 : i+j]
		v, ok := vars[key]
		if !ok {
			*bad = fmt.Errorf("no value for {{%s}}", key)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+2:]
	}
}

func urlAttr(key string) bool { return key == "href" || key == "src" || key == "action" }

// safeURL keeps relative URLs and http, https and mailto ones.
func safeURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "#ZgotmplZ"
	}
	switch strings.ToLower(u.Scheme) {
	case "", "http", "https", "mailto":
		return s
	}
	return "#ZgotmplZ"
}

// link returns <a class=class href=href rel=rel>text</a> (an empty class
// or rel is left out), its href checked like a placeholder's.
func link(class, rel, href, text string) *html.Node {
	a := &html.Node{Type: html.ElementNode, Data: "a", DataAtom: atom.A}
	if class != "" {
		a.Attr = append(a.Attr, html.Attribute{Key: "class", Val: class})
	}
	a.Attr = append(a.Attr, html.Attribute{Key: "href", Val: safeURL(href)})
	if rel != "" {
		a.Attr = append(a.Attr, html.Attribute{Key: "rel", Val: rel})
	}
	a.AppendChild(&html.Node{Type: html.TextNode, Data: text})
	return a
}

func element(a atom.Atom, attrs ...html.Attribute) *html.Node {
	return &html.Node{Type: html.ElementNode, Data: a.String(), DataAtom: a, Attr: attrs}
}

func textNode(s string) *html.Node { return &html.Node{Type: html.TextNode, Data: s} }
