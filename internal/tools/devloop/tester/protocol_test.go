package tester

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/vitest/vitesttest"
)

// The Tester's tools through the real binary: a report parsed and turned
// into hints, a bug opened by the tester, moved by the triager, refused
// where the state machine says no, and schema rejections.
func TestTesterToolsOverStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := vitesttest.RunUnit(t, 3, dir, "todo-be")
	tester := testutil.Serve(t, "--project-dir", dir, "--agent", "tester")
	triager := testutil.Serve(t, "--project-dir", dir, "--agent", "bug-triager")
	call := func(cl *stdioclient.Client, name string, args map[string]any, out any) *stdioclient.ToolResult {
		t.Helper()
		r := testutil.CallTool(t, cl, name, args)
		testutil.DecodeResult(t, name, r, out)
		return r
	}

	var parsed ParseVitestOutput
	if r := call(tester, "parse_vitest", map[string]any{"report_path": run.ReportRel}, &parsed); r.IsError || !parsed.OK || parsed.Failed != 8 || parsed.SuiteErrors != 5 || len(parsed.Failures) != 13 {
		t.Fatalf("parse_vitest: %s", r.Text())
	}
	var hints HintBuilderOutput
	if r := call(tester, "hint_builder", map[string]any{"failures": parsed.Failures, "max_hints": 3}, &hints); r.IsError || !hints.OK || len(hints.Hints) != 3 || hints.Groups != 13 {
		t.Fatalf("hint_builder: %s", r.Text())
	}
	var f Failure
	for _, x := range parsed.Failures {
		if x.Name == "todos counts only open todos" {
			f = x
		}
	}
	var opened BugOpenOutput
	if r := call(tester, "bug_open", map[string]any{"title": "countOpen counts done todos", "unit_id": "todo-be", "severity": "major",
		"evidence": map[string]any{"test": f.Name, "test_file": f.File, "report": run.ReportRel}}, &opened); r.IsError || !opened.OK || opened.ID != "BUG-0001" {
		t.Fatalf("bug_open: %s", r.Text())
	}
	var moved BugTransitionOutput
	if r := call(triager, "bug_transition", map[string]any{"id": "BUG-0001", "to": "triaged", "note": "logic_error in countOpen"}, &moved); r.IsError || !moved.OK {
		t.Fatalf("bug_transition by the triager: %s", r.Text())
	}
	if r := call(triager, "bug_transition", map[string]any{"id": "BUG-0001", "to": "closed"}, &moved); r.IsError || moved.OK || strings.Join(moved.Allowed, ",") != "fixing,wontfix" {
		t.Fatalf("triaged → closed: want ok:false with allowed fixing,wontfix, got %s", r.Text())
	}
	var listed BugListOutput
	if r := call(triager, "bug_list", map[string]any{"status": "triaged"}, &listed); r.IsError || listed.Total != 1 || listed.Bugs[0].ID != "BUG-0001" {
		t.Fatalf("bug_list: %s", r.Text())
	}
	// The triager may not open bugs (configs/agents.json), and the schema
	// guards every field before a tool runs.
	if r := call(triager, "bug_open", map[string]any{"title": "x", "severity": "major", "evidence": map[string]any{"repro": "r"}}, nil); !r.IsError {
		t.Errorf("bug_open by the triager must be refused: %s", r.Text())
	}
	for _, bad := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{"bug_open", map[string]any{"title": "broken", "severity": "critical", "evidence": map[string]any{"repro": "r"}}, "severity"},
		{"bug_open", map[string]any{"title": "broken", "severity": "major"}, "evidence"},
		{"bug_transition", map[string]any{"id": "BUG-1", "to": "fixed"}, "id"},
		{"bug_transition", map[string]any{"id": "BUG-0001", "to": "done"}, "to"},
		{"parse_vitest", map[string]any{"report_path": 7}, "report_path"},
		{"hint_builder", map[string]any{"failures": []any{map[string]any{"name": "x"}}}, "file"},
	} {
		if r := call(tester, bad.tool, bad.args, nil); !r.IsError || !strings.Contains(r.Text(), bad.says) {
			t.Errorf("%s %v: want isError naming %s, got %s", bad.tool, bad.args, bad.says, r.Text())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "timeline.ndjson"))
	if err != nil || strings.Count(string(b), `"kind":"bug.opened"`) != 1 || strings.Count(string(b), `"kind":"bug.transition"`) != 1 {
		t.Errorf("timeline: want one bug.opened and one bug.transition, got %s (%v)", b, err)
	}
	ev, _ := os.ReadFile(filepath.Join(dir, ".toolhost", "events.ndjson"))
	if !strings.Contains(string(ev), `"kind":"bug.transition"`) || !strings.Contains(string(ev), `"agent":"bug-triager"`) {
		t.Errorf("events lack the triager's bug.transition: %s", ev)
	}
}
