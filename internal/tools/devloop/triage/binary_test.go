package triage

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// The triager's tools through the real binary over pipes, as the agent
// CLI runs them: listed for the bug-triager, each answering over MCP, the
// summary written under triage/ and nothing written outside it.
func TestTriagerThroughBinary(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	c := testutil.Serve(t, "--agent", "bug-triager", "--project-dir", dir, "--session", "triage-e2e")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	listed := testutil.ListTools(t, c)
	for _, name := range []string{"extract_evidence", "verify_evidence", "category_classifier", "diff_contract_vs_impl", "find_similar_bug"} {
		if len(listed[name].OutputSchema) == 0 {
			t.Errorf("%s not listed (with an outputSchema) for the bug-triager", name)
		}
	}

	calls := []struct {
		tool string
		args map[string]any
		want []string // substrings of the structured result
	}{
		{"extract_evidence", map[string]any{"bug_id": "BUG-0002"}, []string{`"evidence_status":"verified"`, `"path":"integration/logs/todo-be.err.log"`, `"line":6`}},
		{"verify_evidence", map[string]any{"bug_id": "BUG-0008"}, []string{`"evidence_status":"unverified"`, `run-9999`}},
		{"category_classifier", map[string]any{"bug_id": "BUG-0002"}, []string{`"category":"env_config"`, `"rule":"eaddrinuse"`}},
		{"category_classifier", map[string]any{"text": "Error: Cannot find module 'pg'"}, []string{`"category":"dependency"`}},
		{"diff_contract_vs_impl", map[string]any{"contract": "todos", "unit_id": "todo-be"}, []string{`"method":"DELETE"`, `"impl_method":"PUT"`, `"path":"/health"`}},
		{"find_similar_bug", map[string]any{"bug_id": "BUG-0001", "top_k": 3}, []string{`"similar":[{"bug_id":"BUG-0007"`}},
	}
	for _, cl := range calls {
		res := testutil.CallTool(t, c, cl.tool, cl.args)
		got := string(res.StructuredContent)
		if res.IsError || !strings.Contains(got, `"ok":true`) {
			t.Errorf("%s: isError=%v %s", cl.tool, res.IsError, res.Text())
			continue
		}
		for _, w := range cl.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s result lacks %s:\n%s", cl.tool, w, got)
			}
		}
	}

	// Schema and expected-failure errors say what to change.
	res, err := c.CallTool(ctx, "find_similar_bug", map[string]any{"bug_id": "bug-1"}, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Text(), "bug_id") {
		t.Errorf("bad bug_id: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx, "extract_evidence", map[string]any{"bug_id": "BUG-0009"}, nil)
	if err != nil || res.IsError || !strings.Contains(string(res.StructuredContent), "no evidence cited") {
		t.Errorf("uncited bug: %v %+v", err, res)
	}

	var sum Summary
	readJSON(t, dir, SummaryPath, &sum)
	if e := sum.Bugs["BUG-0002"]; e == nil || e.Category != CatEnvConfig || e.Evidence != statusVerified {
		t.Errorf("summary BUG-0002 = %+v", e)
	}
	if e := sum.Bugs["BUG-0001"]; e == nil || len(e.Similar) == 0 || e.Similar[0].BugID != "BUG-0007" {
		t.Errorf("summary BUG-0001 = %+v", e)
	}
	for _, p := range []string{RecordPath("BUG-0002"), RecordPath("BUG-0008"), IndexPath} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s not written: %v", p, err)
		}
	}
	// Besides toolhost's own .toolhost/ and the timeline, every new file is
	// under triage/.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "triage/") || strings.HasPrefix(rel, ".toolhost/") || rel == "timeline.ndjson" {
			return nil
		}
		if _, err := os.Stat(filepath.Join("testdata", "project", filepath.FromSlash(rel))); err != nil {
			t.Errorf("the triager wrote %s outside triage/", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
