package docs

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestShellEscaping holds fillShell and link to what html/template gave:
// a value can never become markup, leave its attribute, or turn a link
// into script.
func TestShellEscaping(t *testing.T) {
	t.Parallel()
	hostile := `"><script>alert(1)</script><img src=x onerror=alert(2)> & 'q'`
	doc, err := fillShell("page.html", map[string]string{
		"Kind": hostile, "KindLabel": hostile, "SiteTitle": hostile, "Title": hostile, "Page": hostile, "Root": "javascript:alert(3)//",
	})
	if err != nil {
		t.Fatal(err)
	}
	nav := find(doc, func(n *html.Node) bool { return n.Data == "nav" && hasClass(n, "prev-next") })
	nav.AppendChild(link("next", "next", "javascript:alert(4)", hostile))
	nav.AppendChild(link("prev", "prev", "../a.html", "ok"))
	out, err := render(doc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(out)
	for _, bad := range []string{"<script>alert", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("rendered page contains %q:\n%s", bad, page)
		}
	}
	// What a browser sees: one script element per shell <script>, none
	// from a value, and the values back as text and attribute values.
	re, err := parseDocument(out)
	if err != nil {
		t.Fatal(err)
	}
	scripts := 0
	walk(re, func(n *html.Node) {
		if n.Data == "script" {
			scripts++
		}
		if n.Data == "img" {
			t.Error("a value became an <img> element")
		}
		for _, a := range n.Attr {
			if (a.Key == "href" || a.Key == "src") && strings.HasPrefix(a.Val, "javascript:") {
				t.Errorf("<%s %s=%q>: a script URL got through", n.Data, a.Key, a.Val)
			}
		}
	})
	if scripts != 3 {
		t.Errorf("%d script elements, want the shell's 3", scripts)
	}
	if body := find(re, func(n *html.Node) bool { return n.Data == "body" }); body == nil {
		t.Fatal("no body")
	} else if v, _ := attr(body, "data-kind"); v != hostile {
		t.Errorf("data-kind = %q, want the value back whole", v)
	}
	if !strings.Contains(page, `href="#ZgotmplZ"`) || !strings.Contains(page, `href="../a.html"`) {
		t.Errorf("URL filter: want #ZgotmplZ for script URLs and relative links kept:\n%s", page)
	}
}

func TestShellRefusesUnknownPlaceholder(t *testing.T) {
	t.Parallel()
	if _, err := fillShell("index.html", map[string]string{"Kind": "prd"}); err == nil || !strings.Contains(err.Error(), "no value for {{") {
		t.Errorf("err = %v, want a missing value named", err)
	}
}
