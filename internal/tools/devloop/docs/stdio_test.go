package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// The PM drives the real binary over pipes: it sees its document tools,
// bootstraps the PRD, writes a chapter (sanitised, with units), and is
// refused the SDD by the sandbox.
func TestPMOverStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cl := testutil.ServeEnv(t, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, "--project-dir", dir, "--agent", "pm", "--session", "sess-docs")
	visible := testutil.ListTools(t, cl)
	for _, name := range []string{"bootstrap_prd_site", "write_chapter", "write_mvcp_page", "archive_doc", "diff_html", "diff_units", "echo_diff", "update_search_index", "validate_prd_site"} {
		if _, ok := visible[name]; !ok {
			t.Errorf("pm does not see %s", name)
		}
	}
	for _, name := range []string{"bootstrap_sdd_site", "hash_contract", "validate_sdd_consistency"} {
		if _, ok := visible[name]; ok {
			t.Errorf("pm sees %s, which its toolPolicy does not list", name)
		}
	}

	call := func(name string, args any) map[string]any {
		t.Helper()
		var m map[string]any
		testutil.ResultOK(t, name, testutil.CallTool(t, cl, name, args), &m)
		return m
	}
	call("bootstrap_prd_site", map[string]any{"title": "Todo PRD", "chapters": []map[string]string{{"id": "goals", "title": "Goals"}}})
	w := call("write_chapter", map[string]any{"site": "prd", "chapter_id": "goals",
		"html": `<section><h2>Sign in</h2><p onclick="x()">E-mail.</p><script>x()</script></section>`})
	if units, _ := w["units"].([]any); len(units) != 1 || units[0].(map[string]any)["unit"] != "sign-in" {
		t.Errorf("units = %v, want one unit sign-in", w["units"])
	}
	if removed, _ := w["removed"].([]any); len(removed) != 2 {
		t.Errorf("removed = %v, want the onclick and the script", w["removed"])
	}
	page, err := os.ReadFile(filepath.Join(dir, "prd", "goals.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<section data-unit="sign-in" id="sign-in"><h2>Sign in</h2><p>E-mail.</p></section>`) {
		t.Errorf("page article not as expected:\n%s", page)
	}

	// Schema validation happens before the tool runs.
	r := testutil.CallTool(t, cl, "write_chapter", map[string]any{"site": "docs", "chapter_id": "goals", "html": ""})
	if !r.IsError || !strings.Contains(r.Text(), "site") {
		t.Errorf("site=docs: isError=%v %s", r.IsError, r.Text())
	}
	// The PM may not write the SDD the Architect made: the page, its archive
	// and nothing else change.
	arch := testutil.ServeEnv(t, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, "--project-dir", dir, "--agent", "architect", "--session", "sess-docs-arch")
	testutil.ResultOK(t, "bootstrap_sdd_site", testutil.CallTool(t, arch, "bootstrap_sdd_site", map[string]any{"title": "Todo SDD", "chapters": []map[string]string{{"id": "design", "title": "Design"}}}), nil)
	before, err := os.ReadFile(filepath.Join(dir, "sdd", "design.html"))
	if err != nil {
		t.Fatal(err)
	}
	r = testutil.CallTool(t, cl, "write_chapter", map[string]any{"site": "sdd", "chapter_id": "design", "html": "<p>x</p>"})
	if !r.IsError || !strings.Contains(r.Text(), "Sandbox violation: devloop-pm tried to write sdd/design.html") {
		t.Errorf("pm writing sdd: isError=%v %s", r.IsError, r.Text())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "sdd", "design.html")); string(after) != string(before) {
		t.Error("the refused write changed sdd/design.html")
	}
	if _, err := os.Stat(filepath.Join(dir, "archive", "sdd")); !os.IsNotExist(err) {
		t.Error("the refused write archived the SDD page")
	}
}
