package tester

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/callctx"
)

func openBug(t *testing.T, c *callctx.Ctx, args map[string]any) BugOpenOutput {
	t.Helper()
	out, res, err := call[BugOpenOutput](t, c, BugOpen(), args)
	if err != nil || !out.OK {
		t.Fatalf("bug_open %v: err %v, result %s", args, err, res.Structured)
	}
	return out
}

func loadBug(t *testing.T, c *callctx.Ctx, id string) *bugs.Bug {
	t.Helper()
	b, err := bugs.Load(c.ProjectDir, id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBugOpenDedupesByFingerprint(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "todo-be")
	first := openBug(t, c, map[string]any{"title": "countOpen counts done todos", "severity": "major",
		"evidence": map[string]any{"test": "todos countOpen counts only open todos", "report": "reports/mixed.json"}})
	if first.ID != "BUG-0001" || first.Duplicate || first.BugStatus != "open" || first.Path != "bugs/BUG-0001.json" {
		t.Fatalf("first open = %+v", first)
	}
	// Same unit, test and title up to case and punctuation: a duplicate,
	// whose new evidence is appended.
	again := openBug(t, c, map[string]any{"title": "  CountOpen: counts DONE todos!", "severity": "minor",
		"evidence": map[string]any{"test": "todos countOpen counts only open todos", "log": "expected 2 to be 1"}})
	if again.ID != "BUG-0001" || !again.Duplicate || !again.EvidenceAdded {
		t.Fatalf("second open = %+v, want duplicate of BUG-0001 with evidence added", again)
	}
	// Citing exactly the same thing again appends nothing.
	same := openBug(t, c, map[string]any{"title": "countOpen counts done todos", "severity": "major",
		"evidence": map[string]any{"test": "todos countOpen counts only open todos", "report": "reports/mixed.json"}})
	if !same.Duplicate || same.EvidenceAdded {
		t.Fatalf("repeat open = %+v, want duplicate without new evidence", same)
	}
	// Another unit or another test is another bug.
	other := openBug(t, c, map[string]any{"title": "countOpen counts done todos", "unit_id": "todo-fe", "severity": "major",
		"evidence": map[string]any{"test": "todos countOpen counts only open todos"}})
	otherTest := openBug(t, c, map[string]any{"title": "countOpen counts done todos", "severity": "blocker",
		"evidence": map[string]any{"test": "todos countOpen returns zero", "repro": "npm test"}})
	if other.ID != "BUG-0002" || otherTest.ID != "BUG-0003" || other.Duplicate || otherTest.Duplicate {
		t.Fatalf("other unit %+v, other test %+v, want BUG-0002 and BUG-0003", other, otherTest)
	}
	b := loadBug(t, c, "BUG-0001")
	if len(b.Evidence) != 2 || b.Evidence[1].Log != "expected 2 to be 1" || b.Evidence[0].AddedBy != "tester" || b.UnitID != "todo-be" || b.Severity != "major" {
		t.Errorf("BUG-0001 = %+v, want 2 evidence entries, unit todo-be, severity from the first open", b)
	}
	raw, _ := os.ReadFile(filepath.Join(c.ProjectDir, "bugs", "BUG-0001.json"))
	if !strings.HasPrefix(string(raw), "{\n  \"id\": \"BUG-0001\"") || !strings.HasSuffix(string(raw), "}\n") {
		t.Errorf("bug file is not pretty JSON with a trailing newline:\n%s", raw)
	}
	tl := ndjson(t, c, "timeline.ndjson")
	ev := ndjson(t, c, ".toolhost/events.ndjson")
	if len(tl) != 5 || len(ev) != 5 || tl[0]["kind"] != "bug.opened" || ev[1]["kind"] != "bug.opened" {
		t.Fatalf("want 5 bug.opened timeline entries and events, got %d and %d", len(tl), len(ev))
	}
	if d := tl[1]["data"].(map[string]any); d["duplicate"] != true || d["id"] != "BUG-0001" {
		t.Errorf("timeline entry of the duplicate = %v", d)
	}
}

// A file-level failure has no test name: the test file (and the report) is
// the evidence, and two such bugs of different files are different bugs.
func TestBugOpenFileLevelFailure(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "todo-be")
	open := func(file string) BugOpenOutput {
		t.Helper()
		out, _, err := call[BugOpenOutput](t, c, BugOpen(), map[string]any{"title": "orders tests cannot reach the database: connect ECONNREFUSED", "severity": "major",
			"evidence": map[string]any{"test_file": file, "report": "reports/vitest3.json"}})
		if err != nil || !out.OK {
			t.Fatalf("bug_open of a file-level failure: %v %+v", err, out)
		}
		return out
	}
	a := open("src/orders.test.ts")
	if again := open("src/orders.test.ts"); !again.Duplicate || again.ID != a.ID {
		t.Errorf("the same file-level failure again = %+v, want a duplicate of %s", again, a.ID)
	}
	b, err := os.ReadFile(filepath.Join(c.ProjectDir, "bugs", a.ID+".json"))
	if err != nil || !strings.Contains(string(b), `"test_file": "src/orders.test.ts"`) {
		t.Fatalf("%s: %s %v", a.ID, b, err)
	}
}

func TestBugOpenRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   map[string]any
		reason string
	}{
		{"no evidence", map[string]any{"title": "broken", "severity": "major", "evidence": map[string]any{}}, "at least one of test, test_file, log, run_id or repro"},
		{"only a report", map[string]any{"title": "broken", "severity": "major", "evidence": map[string]any{"report": "reports/r.json"}}, "at least one of"},
		{"line without file", map[string]any{"title": "broken", "severity": "major", "evidence": map[string]any{"log": "x", "log_line": 3}}, "log_line needs evidence.log_file"},
		{"title of symbols", map[string]any{"title": "!!!", "severity": "major", "evidence": map[string]any{"repro": "x"}}, "no letters or digits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCtx(t, "tester", "u")
			out, _, err := call[BugOpenOutput](t, c, BugOpen(), tc.args)
			if err != nil || out.OK || !strings.Contains(out.Reason, tc.reason) {
				t.Fatalf("want ok:false with %q, got %v %+v", tc.reason, err, out)
			}
			if _, err := os.Stat(filepath.Join(c.ProjectDir, "bugs")); !os.IsNotExist(err) {
				t.Errorf("a refused bug_open must write nothing (bugs/: %v)", err)
			}
		})
	}
}

// legal is the bug state machine as the tracker documents it (open →
// triaged → fixing → fixed → verified → closed, reopen, wontfix), written
// out independently of the code.
var legal = map[[2]string]bool{
	{"open", "triaged"}: true, {"triaged", "fixing"}: true, {"fixing", "fixed"}: true,
	{"fixed", "verified"}: true, {"verified", "closed"}: true,
	{"fixed", "open"}: true, {"verified", "open"}: true, {"closed", "open"}: true,
	{"open", "wontfix"}: true, {"triaged", "wontfix"}: true,
}

// pathTo is a legal way from open to each status.
var pathTo = map[string][]string{
	"open": {}, "triaged": {"triaged"}, "fixing": {"triaged", "fixing"},
	"fixed": {"triaged", "fixing", "fixed"}, "verified": {"triaged", "fixing", "fixed", "verified"},
	"closed": {"triaged", "fixing", "fixed", "verified", "closed"}, "wontfix": {"wontfix"},
}

func TestBugTransitionStateMachine(t *testing.T) {
	t.Parallel()
	for _, from := range bugs.Statuses {
		for _, to := range bugs.Statuses {
			t.Run(from+"→"+to, func(t *testing.T) {
				t.Parallel()
				c := newCtx(t, "bug-triager", "u")
				id := openBug(t, c, map[string]any{"title": "t", "severity": "minor", "evidence": map[string]any{"repro": "r"}}).ID
				for _, step := range pathTo[from] {
					out, _, err := call[BugTransitionOutput](t, c, BugTransition(), map[string]any{"id": id, "to": step})
					if err != nil || !out.OK {
						t.Fatalf("setup %s: %v %+v", step, err, out)
					}
				}
				before, _ := os.ReadFile(filepath.Join(c.ProjectDir, bugs.Path(id)))
				out, res, err := call[BugTransitionOutput](t, c, BugTransition(), map[string]any{"id": id, "to": to, "note": "because"})
				if err != nil {
					t.Fatal(err)
				}
				b := loadBug(t, c, id)
				if legal[[2]string{from, to}] {
					last := b.History[len(b.History)-1]
					if !out.OK || out.From != from || out.To != to || b.Status != to || len(b.History) != len(pathTo[from])+1 ||
						last.From != from || last.To != to || last.By != "bug-triager" || last.Note != "because" || last.At.IsZero() {
						t.Fatalf("legal move: result %s, bug %+v", res.Structured, b)
					}
					tl := ndjson(t, c, "timeline.ndjson")
					if e := tl[len(tl)-1]; e["kind"] != "bug.transition" || e["message"] != fmt.Sprintf("%s %s → %s", id, from, to) {
						t.Errorf("last timeline entry %v", e)
					}
					return
				}
				var allowed []string
				for k := range legal {
					if k[0] == from {
						allowed = append(allowed, k[1])
					}
				}
				slices.Sort(allowed)
				gotAllowed := slices.Sorted(slices.Values(out.Allowed))
				if out.OK || !res.Failed || !slices.Equal(gotAllowed, allowed) || b.Status != from || !strings.Contains(out.Reason, from) {
					t.Fatalf("illegal move: result %s, want ok:false with allowed %v and status unchanged %s", res.Structured, allowed, from)
				}
				for _, a := range allowed {
					if !strings.Contains(out.Reason, a) {
						t.Errorf("reason %q does not list %s", out.Reason, a)
					}
				}
				after, _ := os.ReadFile(filepath.Join(c.ProjectDir, bugs.Path(id)))
				if string(before) != string(after) {
					t.Errorf("a refused transition changed the bug file")
				}
			})
		}
	}
}

func TestBugTransitionUnknownBug(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "")
	out, _, err := call[BugTransitionOutput](t, c, BugTransition(), map[string]any{"id": "BUG-0042", "to": "triaged"})
	if err != nil || out.OK || !strings.Contains(out.Reason, "no bug BUG-0042") {
		t.Fatalf("want ok:false naming the bug, got %v %+v", err, out)
	}
}

func TestBugListFiltersAndSorts(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "api")
	for _, b := range []struct{ title, unit, sev string }{
		{"minor one", "api", "minor"}, {"blocker one", "api", "blocker"}, {"major one", "web", "major"},
		{"blocker two", "web", "blocker"}, {"major two", "api", "major"},
	} {
		openBug(t, c, map[string]any{"title": b.title, "unit_id": b.unit, "severity": b.sev, "evidence": map[string]any{"repro": "x"}})
	}
	if out, _, _ := call[BugTransitionOutput](t, c, BugTransition(), map[string]any{"id": "BUG-0002", "to": "triaged"}); !out.OK {
		t.Fatal(out.Reason)
	}
	ids := func(out BugListOutput) string {
		var s []string
		for _, b := range out.Bugs {
			s = append(s, b.ID)
		}
		return strings.Join(s, ",")
	}
	cases := []struct {
		name  string
		args  map[string]any
		want  string
		total int
	}{
		{"all", map[string]any{}, "BUG-0002,BUG-0004,BUG-0003,BUG-0005,BUG-0001", 5},
		{"unit", map[string]any{"unit_id": "api"}, "BUG-0002,BUG-0005,BUG-0001", 3},
		{"severity", map[string]any{"severity": "blocker"}, "BUG-0002,BUG-0004", 2},
		{"status", map[string]any{"status": "open"}, "BUG-0004,BUG-0003,BUG-0005,BUG-0001", 4},
		{"limit", map[string]any{"limit": 2}, "BUG-0002,BUG-0004", 5},
		{"nothing", map[string]any{"unit_id": "nope"}, "", 0},
	}
	for _, tc := range cases {
		out, _, err := call[BugListOutput](t, c, BugList(), tc.args)
		if err != nil || !out.OK || ids(out) != tc.want || out.Total != tc.total {
			t.Errorf("%s: got %s (total %d), want %s (total %d), err %v", tc.name, ids(out), out.Total, tc.want, tc.total, err)
		}
	}
	out, res, _ := call[BugListOutput](t, c, BugList(), map[string]any{"unit_id": "nope"})
	if out.Bugs == nil || !json.Valid(res.Structured) || !strings.Contains(string(res.Structured), `"bugs":[]`) {
		t.Errorf("an empty list must be [], got %s", res.Structured)
	}
}

// An unreadable bug file is named in bug_list's result (so someone can fix
// it) instead of failing the whole list and every bug_open after it.
func TestBugListAndOpenSurviveAnUnreadableBug(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "tester", "api")
	openBug(t, c, map[string]any{"title": "first one", "severity": "minor", "evidence": map[string]any{"repro": "x"}})
	if err := os.WriteFile(filepath.Join(c.ProjectDir, "bugs", "BUG-0002.json"), []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := openBug(t, c, map[string]any{"title": "third one", "severity": "major", "evidence": map[string]any{"repro": "x"}}); got.ID != "BUG-0003" {
		t.Errorf("bug_open next to an unreadable BUG-0002 gave %s, want BUG-0003", got.ID)
	}
	out, res, err := call[BugListOutput](t, c, BugList(), map[string]any{})
	if err != nil || !out.OK || out.Total != 2 || len(out.Unreadable) != 1 || !strings.Contains(out.Unreadable[0], "bugs/BUG-0002.json") {
		t.Fatalf("bug_list = %s, %v", res.Structured, err)
	}
}
