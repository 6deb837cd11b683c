package docs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// The PM drives the real binary over pipes: it sees its document tools,
// bootstraps the PRD, writes a chapter (sanitised, with units), and is
// refused the SDD by the sandbox.
func TestPMOverStdio(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	dir := t.TempDir()
	cl, err := stdioclient.Start(bin, []string{"serve", "--project-dir", dir, "--agent", "pm", "--session", "sess-docs"},
		[]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(5 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Initialize(ctx, "2025-06-18", nil); err != nil {
		t.Fatal(err)
	}

	raw, err := cl.Call(ctx, "tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	visible := map[string]bool{}
	for _, tl := range list.Tools {
		visible[tl.Name] = true
	}
	for _, name := range []string{"bootstrap_prd_site", "write_chapter", "write_mvcp_page", "archive_doc", "diff_html", "diff_units", "echo_diff", "update_search_index", "validate_prd_site"} {
		if !visible[name] {
			t.Errorf("pm does not see %s", name)
		}
	}
	for _, name := range []string{"bootstrap_sdd_site", "hash_contract", "validate_sdd_consistency"} {
		if visible[name] {
			t.Errorf("pm sees %s, which its toolPolicy does not list", name)
		}
	}

	call := func(name string, args any) map[string]any {
		t.Helper()
		r, err := cl.CallTool(ctx, name, args, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.IsError {
			t.Fatalf("%s: isError: %s", name, r.Text())
		}
		var m map[string]any
		if err := json.Unmarshal(r.StructuredContent, &m); err != nil {
			t.Fatalf("%s: structuredContent %s: %v", name, r.StructuredContent, err)
		}
		if m["ok"] != true {
			t.Fatalf("%s: %s", name, r.StructuredContent)
		}
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
	r, err := cl.CallTool(ctx, "write_chapter", map[string]any{"site": "docs", "chapter_id": "goals", "html": ""}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(r.Text(), "site") {
		t.Errorf("site=docs: isError=%v %s", r.IsError, r.Text())
	}
	// The PM may not write the SDD.
	r, err = cl.CallTool(ctx, "write_chapter", map[string]any{"site": "sdd", "chapter_id": "design", "html": "<p>x</p>"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(r.Text(), "Sandbox violation: devloop-pm tried to write sdd/design.html") {
		t.Errorf("pm writing sdd: isError=%v %s", r.IsError, r.Text())
	}
	if _, err := os.Stat(filepath.Join(dir, "sdd")); !os.IsNotExist(err) {
		t.Error("the refused write created sdd/")
	}
}
