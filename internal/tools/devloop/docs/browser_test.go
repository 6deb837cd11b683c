package docs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/toolhost/toolhost/internal/testutil"
)

// chromium runs headless Chromium on url with extra flags and returns its
// stdout. Each run gets its own profile so runs never share state.
func chromium(t *testing.T, bin, url string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-proxy-server", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=3000",
	}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	return string(out)
}

// browserSite builds a PRD site with content worth searching.
func browserSite(t *testing.T) *project {
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "overview", "goals", "risks")
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "overview", "html": overviewBody})
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": goalsV1})
	mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "risks",
		"html": `<section><h2>Lost password</h2><p>Reset by e-mail link.</p></section><section><h2>Data loss</h2><p>Sync conflicts.</p></section>`})
	mustRun[WriteOutput](t, c, WriteMVCPPage(), map[string]any{"name": "todo-list", "title": "Todo list", "html": `<p><a href="../goals.html#scope">Scope</a></p>`})
	mustRun[SearchIndexOutput](t, c, UpdateSearchIndex(), map[string]any{"site": "prd"})
	return p
}

// shown is what the page displays after its scripts ran.
type shown struct {
	count   string
	hits    []string // "href|title"
	toc     []string
	current string
}

func readShown(t *testing.T, dom string) shown {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	var s shown
	byID := func(id string) *html.Node {
		return find(doc, func(n *html.Node) bool { v, _ := attr(n, "id"); return v == id })
	}
	if n := byID("result-count"); n != nil {
		s.count = visibleText(n)
	}
	if res := byID("results"); res != nil {
		walk(res, func(n *html.Node) {
			if hasClass(n, "hit-title") {
				href, _ := attr(n, "href")
				s.hits = append(s.hits, href+"|"+visibleText(n))
			}
		})
	}
	if toc := byID("toc"); toc != nil {
		walk(toc, func(n *html.Node) {
			if n.Data == "a" {
				href, _ := attr(n, "href")
				s.toc = append(s.toc, href)
				if hasClass(n, "current") {
					s.current = href
				}
			}
		})
	}
	return s
}

func TestBrowserSearch(t *testing.T) {
	bin := testutil.NeedTool(t, "chromium", "TOOLHOST_CHROMIUM", "bash scripts/deps/20-chromium.sh")
	p := browserSite(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(p.path("prd"))))
	t.Cleanup(srv.Close)
	// A server that lacks the JavaScript twins: shell.js falls back to
	// fetching site.json and search-index.json.
	jsonOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/site-data.js") || strings.HasSuffix(r.URL.Path, "/search-index.js") {
			http.NotFound(w, r)
			return
		}
		http.FileServer(http.Dir(p.path("prd"))).ServeHTTP(w, r)
	}))
	t.Cleanup(jsonOnly.Close)
	fileURL := "file://" + filepath.ToSlash(p.path("prd"))
	cases := []struct {
		name string
		url  string
		want shown
	}{
		{"file:// two terms", fileURL + "/overview.html?q=password+e-mail", shown{
			count:   "2 results",
			hits:    []string{"goals.html#login|Sign in", "risks.html#lost-password|Lost password"},
			current: "overview.html",
		}},
		{"file:// from a prototype page", fileURL + "/mvcp/todo-list.html?q=offline", shown{
			count:   "1 result",
			hits:    []string{"../goals.html#offline|Offline"},
			current: "../mvcp/todo-list.html",
		}},
		{"static server", srv.URL + "/risks.html?q=sync", shown{
			count:   "1 result",
			hits:    []string{"risks.html#data-loss|Data loss"},
			current: "risks.html",
		}},
		{"static server without the .js twins", jsonOnly.URL + "/index.html?q=conflicts", shown{
			count: "1 result",
			hits:  []string{"risks.html#data-loss|Data loss"},
		}},
		{"no match", fileURL + "/goals.html?q=blockchain", shown{count: "0 results", current: "goals.html"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := readShown(t, chromium(t, bin, tc.url, "--dump-dom"))
			if got.count != tc.want.count || strings.Join(got.hits, "\n") != strings.Join(tc.want.hits, "\n") {
				t.Fatalf("page shows %q %q, want %q %q", got.count, got.hits, tc.want.count, tc.want.hits)
			}
			if len(got.toc) != 4 || got.current != tc.want.current {
				t.Fatalf("sidebar = %q (current %q), want 3 chapters and 1 prototype, current %q", got.toc, got.current, tc.want.current)
			}
		})
	}

	art := filepath.Join("testdata", "artifacts")
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	shot, err := filepath.Abs(filepath.Join(art, "prd-search.png"))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(shot)
	chromium(t, bin, fileURL+"/goals.html?q=password", "--screenshot="+shot, "--window-size=1280,900")
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s missing or blank: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
