package docs

import (
	"reflect"
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		in          string
		wantGone    []string // substrings that must not survive
		wantKept    []string // substrings that must survive
		wantRemoved []string // substrings of the removal report, in order
	}{
		{"script element", `<section><h2>A</h2><script>steal()</script><p>ok</p></section>`,
			[]string{"<script", "steal()"}, []string{"<p>ok</p>"}, []string{`<script> element in section "A"`}},
		{"top-level script", `<script>x()</script><p>text</p>`,
			[]string{"<script"}, []string{"<p>text</p>"}, []string{"<script> element at top level"}},
		{"iframe", `<p>a</p><iframe src="https://evil.example"></iframe>`,
			[]string{"<iframe", "evil"}, []string{"<p>a</p>"}, []string{"<iframe> element at top level"}},
		{"object and embed", `<object data="x.swf"></object><embed src="y.swf">`,
			[]string{"<object", "<embed"}, nil, []string{"<object> element", "<embed> element"}},
		{"event handlers", `<img src="a.png" onerror="x()" ONLOAD="y()"><button onclick="z()">Go</button>`,
			[]string{"onerror", "ONLOAD", "onload", "onclick"}, []string{`src="a.png"`, "Go</button>"},
			[]string{"onerror attribute on <img>", "onload attribute on <img>", "onclick attribute on <button>"}},
		{"javascript URL", `<a href="javascript:alert(1)">x</a>`,
			[]string{"javascript"}, []string{"<a>x</a>"}, []string{"javascript: URL in href of <a>"}},
		{"obfuscated javascript URL", "<a href=\" JaVa\tScRiPt:alert(1)\">x</a><form action=\"vbscript:msgbox\"></form>",
			[]string{"alert", "vbscript"}, []string{"<a>x</a>"}, []string{"javascript: URL in href", "vbscript: URL in action of <form>"}},
		{"meta refresh and base", `<section><h2>M</h2><meta http-equiv="refresh" content="0;url=javascript:alert(1)"><base href="https://evil.example/"><p>ok</p></section>`,
			[]string{"<meta", "refresh", "<base", "evil"}, []string{"<p>ok</p>"}, []string{`<meta> element in section "M"`, `<base> element in section "M"`}},
		{"safe markup untouched", `<section data-unit="s"><h2>S</h2><p class="note">See <a href="goals.html#login" title="t">login</a> and <code>onclick</code>.</p><table><tr><td>1</td></tr></table></section>`,
			nil, []string{`<a href="goals.html#login" title="t">login</a>`, "<code>onclick</code>", "<td>1</td>"}, nil},
		{"text mentioning script survives", `<p>Never put &lt;script&gt; in a page.</p>`,
			nil, []string{"&lt;script&gt;"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			c := p.ctx("pm")
			bootstrapPRD(t, c, "goals")
			out := mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": tc.in})
			page := p.read("prd/goals.html")
			article := page[strings.Index(page, `<article class="body"`):strings.Index(page, "</article>")]
			for _, s := range tc.wantGone {
				if strings.Contains(article, s) {
					t.Errorf("%q survived:\n%s", s, article)
				}
			}
			for _, s := range tc.wantKept {
				if !strings.Contains(article, s) {
					t.Errorf("%q was lost:\n%s", s, article)
				}
			}
			if len(out.Removed) != len(tc.wantRemoved) {
				t.Fatalf("removed = %q, want %d entries like %q", out.Removed, len(tc.wantRemoved), tc.wantRemoved)
			}
			for i, w := range tc.wantRemoved {
				if !strings.Contains(out.Removed[i], w) {
					t.Errorf("removed[%d] = %q, want it to contain %q", i, out.Removed[i], w)
				}
			}
		})
	}
}

func TestUnitAssignment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		in        string
		want      []string
		wantNotes int
	}{
		{"from headings", `<section><h2>Sign in</h2></section><section><h3>Two-factor auth!</h3></section>`, []string{"sign-in", "two-factor-auth"}, 0},
		{"given data-unit kept", `<section data-unit="req-7"><h2>Anything</h2></section>`, []string{"req-7"}, 0},
		{"given data-unit normalised", `<section data-unit="Req 7"><h2>Anything</h2></section>`, []string{"req-7"}, 1},
		{"duplicate headings made unique", `<section><h2>Notes</h2></section><section><h2>Notes</h2></section><section><h2>Notes</h2></section>`, []string{"notes", "notes-2", "notes-3"}, 2},
		{"explicit id reserved before derived", `<section><h2>Login</h2></section><section data-unit="login"><h2>Other</h2></section>`, []string{"login-2", "login"}, 1},
		{"no heading", `<section><p>plain</p></section><section><p>plain</p></section>`, []string{"section-1", "section-2"}, 0},
		{"non-latin heading", `<section><h2>登录 流程</h2></section>`, []string{"登录-流程"}, 0},
		{"nested sections are not units", `<section><h2>Outer</h2><section><h3>Inner</h3></section></section>`, []string{"outer"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			c := p.ctx("pm")
			bootstrapPRD(t, c, "goals")
			out := mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": tc.in})
			var got []string
			for _, u := range out.Units {
				got = append(got, u.ID)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("units = %q, want %q", got, tc.want)
			}
			if len(out.Notes) != tc.wantNotes {
				t.Errorf("notes = %q, want %d", out.Notes, tc.wantNotes)
			}
			page := p.read("prd/goals.html")
			for _, id := range tc.want {
				if !strings.Contains(page, `data-unit="`+id+`" id="`+id+`"`) {
					t.Errorf("page lacks a section with data-unit and id %q", id)
				}
			}
		})
	}
}

// A unit's id survives a rewrite that changes its text, so versions line up;
// the page written back (as an agent reads and edits it) keeps every id.
func TestUnitIDsSurviveRewrites(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "goals")
	first := mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": goalsV1})
	page := p.read("prd/goals.html")
	start := strings.Index(page, `<article class="body"`)
	start += strings.Index(page[start:], ">") + 1
	body := page[start:strings.Index(page, "</article>")]
	body = strings.Replace(body, "<h2>Sign in</h2>", "<h2>Log in</h2>", 1)
	second := mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": body})
	if !reflect.DeepEqual(unitIDs(first.Units), unitIDs(second.Units)) {
		t.Fatalf("ids changed across a rewrite: %v → %v", unitIDs(first.Units), unitIDs(second.Units))
	}
}

func unitIDs(us []Unit) []string {
	var s []string
	for _, u := range us {
		s = append(s, u.ID)
	}
	return s
}

func TestSlug(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"Hello, World":          "hello-world",
		"  --Trim-- ":           "trim",
		"API v2 (draft)":        "api-v2-draft",
		"":                      "",
		"!!!":                   "",
		strings.Repeat("a", 80): strings.Repeat("a", 64),
	}
	for in, want := range cases {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
