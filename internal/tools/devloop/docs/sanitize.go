package docs

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// droppedElements never survive sanitising: they run code, embed another
// document or take the page elsewhere. The issue names <script> and
// <iframe>; the others are the same hazard under another name (<meta
// http-equiv=refresh> navigates, to a javascript: URL too; <base href>
// re-roots every relative link and asset of the page).
var droppedElements = map[string]bool{
	"script": true, "iframe": true, "frame": true, "frameset": true, "object": true, "embed": true,
	"meta": true, "base": true,
}

// urlAttributes hold URLs a browser follows or loads.
var urlAttributes = map[string]bool{
	"href": true, "src": true, "action": true, "formaction": true, "poster": true,
	"background": true, "cite": true, "data": true, "xlink:href": true, "srcset": true,
}

// sanitize removes from nodes (in place) everything that runs code: the
// droppedElements, on* event attributes and javascript:/vbscript: URLs. It
// returns the nodes that remain at the top level and one line per removal,
// naming what was removed and where.
func sanitize(nodes []*html.Node) ([]*html.Node, []string) {
	var removed []string
	var clean func(n *html.Node, where string)
	clean = func(n *html.Node, where string) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			if c.Type == html.ElementNode && droppedElements[c.Data] {
				removed = append(removed, fmt.Sprintf("<%s> element%s", c.Data, where))
				n.RemoveChild(c)
			} else {
				cleanAttrs(c, where, &removed)
				clean(c, whereOf(c, where))
			}
			c = next
		}
	}
	var kept []*html.Node
	for _, n := range nodes {
		if n.Type == html.ElementNode && droppedElements[n.Data] {
			removed = append(removed, fmt.Sprintf("<%s> element at top level", n.Data))
			continue
		}
		cleanAttrs(n, " at top level", &removed)
		clean(n, whereOf(n, " at top level"))
		kept = append(kept, n)
	}
	return kept, removed
}

// whereOf describes the position below n for removal reports: the nearest
// section's data-unit or heading.
func whereOf(n *html.Node, outer string) string {
	if n.Type != html.ElementNode || n.DataAtom != atom.Section {
		return outer
	}
	if u, ok := attr(n, "data-unit"); ok && u != "" {
		return fmt.Sprintf(" in section %q", u)
	}
	if h := headingOf(n); h != "" {
		return fmt.Sprintf(" in section %q", h)
	}
	return outer
}

func cleanAttrs(n *html.Node, where string, removed *[]string) {
	if n.Type != html.ElementNode {
		return
	}
	kept := n.Attr[:0]
	for _, a := range n.Attr {
		key := strings.ToLower(a.Key)
		if a.Namespace != "" {
			key = a.Namespace + ":" + key
		}
		switch {
		case strings.HasPrefix(strings.ToLower(a.Key), "on"):
			*removed = append(*removed, fmt.Sprintf("%s attribute on <%s>%s", a.Key, n.Data, where))
		case urlAttributes[key] && scriptURL(a.Val):
			*removed = append(*removed, fmt.Sprintf("%s URL in %s of <%s>%s", schemeOf(a.Val), key, n.Data, where))
		default:
			kept = append(kept, a)
		}
	}
	n.Attr = kept
}

// scriptURL reports whether a URL would run code when followed. Browsers
// ignore ASCII white space and control characters inside the scheme, so
// those are dropped before comparing.
func scriptURL(v string) bool {
	s := schemeOf(v)
	return s == "javascript:" || s == "vbscript:"
}

func schemeOf(v string) string {
	var b strings.Builder
	for _, r := range v {
		if r <= ' ' {
			continue
		}
		if r == ':' {
			b.WriteRune(r)
			return strings.ToLower(b.String())
		}
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return ""
		}
		b.WriteRune(r)
	}
	return ""
}
