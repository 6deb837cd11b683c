package docs

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

func TestArchiveDocVersions(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "goals")
	arch := func() ArchiveOutput {
		return mustRun[ArchiveOutput](t, c, ArchiveDoc(), map[string]any{"path": "prd/goals.html"})
	}
	a1 := arch()
	a2 := arch()
	if a1.Version != 1 || !a1.Created || a2.Version != 1 || a2.Created {
		t.Fatalf("identical content archived twice: %+v then %+v, want v1 created then v1 not created", a1, a2)
	}
	p.write("prd/goals.html", p.read("prd/goals.html")+"<!-- edited -->")
	a3 := arch()
	if a3.Version != 2 || !a3.Created || a3.File != "archive/prd/goals.html/v2.html" {
		t.Fatalf("changed content: %+v, want v2 created", a3)
	}
	if p.read("archive/prd/goals.html/v2.html") != p.read("prd/goals.html") {
		t.Fatal("v2.html is not the current content")
	}
	var vs Versions
	if err := json.Unmarshal([]byte(p.read("archive/prd/goals.html/versions.json")), &vs); err != nil {
		t.Fatal(err)
	}
	if vs.Path != "prd/goals.html" || len(vs.Versions) != 2 {
		t.Fatalf("versions.json = %+v", vs)
	}
	for i, v := range vs.Versions {
		data := p.read(versionPath("prd/goals.html", v.Version))
		if v.Version != i+1 || v.SHA256 != sha256Hex([]byte(data)) || v.Size != len(data) || v.Agent != "pm" || v.Time.IsZero() {
			t.Errorf("versions[%d] = %+v does not describe its file", i, v)
		}
	}
	raw := p.read("archive/prd/goals.html/versions.json")
	if !strings.HasSuffix(raw, "}\n") || !strings.Contains(raw, "\n  \"versions\"") {
		t.Error("versions.json is not pretty-printed with a trailing newline")
	}

	_, r, err := run[ArchiveOutput](t, c, ArchiveDoc(), map[string]any{"path": "prd/nope.html"})
	if err != nil || !r.Failed || !strings.Contains(r.Reason, "does not exist") {
		t.Fatalf("missing doc: err=%v reason=%q", err, r.Reason)
	}
}

func TestHostileDocPaths(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "goals")
	p.write("secret.html", "<p>outside the sites</p>")
	tools := []tool.Tool{ArchiveDoc(), DiffHTML(), DiffUnits(), EchoDiff()}
	for _, bad := range []string{"../outside.html", "/etc/passwd", "prd/../../x.html", "prd/\x00.html", ".."} {
		for _, tl := range tools {
			_, _, err := run[struct{}](t, c, tl, map[string]any{"path": bad})
			var rej fault.Rejection
			if !errors.As(err, &rej) || !strings.Contains(err.Error(), "path") {
				t.Errorf("%s path=%q: err = %v, want a rejection naming path", tl.Spec().Name, bad, err)
			}
		}
	}
	// A project file outside any site may be read, but archiving it writes
	// outside the PM's allow-list: the sandbox refuses and nothing is left.
	if _, _, err := run[ArchiveOutput](t, c, ArchiveDoc(), map[string]any{"path": "secret.html"}); !errors.Is(err, sandbox.ErrEscape) {
		t.Errorf("archive secret.html: err = %v, want a sandbox violation", err)
	}
	if _, err := os.Stat(p.path("archive")); !os.IsNotExist(err) {
		t.Error("refused archives left files behind")
	}
}

// Three versions of one chapter: v1 → v2 changes one unit, adds one and
// removes one; v2 → v3 renames a heading (same data-unit) and changes only
// markup elsewhere.
const (
	chapterV1 = `<section data-unit="scope"><h2>Scope</h2><p>Personal todo lists.</p></section>
<section data-unit="login"><h2>Sign in</h2><p>E-mail and password.</p></section>
<section data-unit="offline"><h2>Offline</h2><p>Works without network.</p></section>`
	chapterV2 = `<section data-unit="scope"><h2>Scope</h2><p>Personal and shared todo lists.</p></section>
<section data-unit="login"><h2>Sign in</h2><p>E-mail and password.</p></section>
<section data-unit="sharing"><h2>Sharing</h2><p>Invite people by e-mail.</p><p>They can edit.</p></section>`
	chapterV3 = `<section data-unit="scope"><h2>Scope</h2><p><b>Personal</b> and shared todo lists.</p></section>
<section data-unit="login"><h2>Log in</h2><p>E-mail and password.</p></section>
<section data-unit="sharing"><h2>Sharing</h2><p>Invite people by e-mail.</p><p>They can edit.</p></section>`
)

func threeVersions(t *testing.T) (*project, func(string, any) json.RawMessage) {
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "goals")
	for i, body := range []string{chapterV1, chapterV2, chapterV3} {
		out := mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": body})
		// v1 in the archive is the empty bootstrap page.
		if out.Version != i+2 || out.Archived != i+1 {
			t.Fatalf("write %d: version %d archived %d, want %d and %d", i+1, out.Version, out.Archived, i+2, i+1)
		}
	}
	call := func(name string, args any) json.RawMessage {
		t.Helper()
		tools := map[string]func() json.RawMessage{
			"diff_units": func() json.RawMessage {
				o := mustRun[DiffUnitsOutput](t, c, DiffUnits(), args)
				b, _ := json.Marshal(o)
				return b
			},
			"diff_html": func() json.RawMessage {
				o := mustRun[DiffHTMLOutput](t, c, DiffHTML(), args)
				b, _ := json.Marshal(o)
				return b
			},
			"echo_diff": func() json.RawMessage {
				o := mustRun[EchoDiffOutput](t, c, EchoDiff(), args)
				b, _ := json.Marshal(o)
				return b
			},
		}
		return tools[name]()
	}
	return p, call
}

func statuses(o DiffUnitsOutput) map[string]string {
	m := map[string]string{}
	for _, u := range o.Units {
		m[u.Unit] = u.Status
	}
	return m
}

func TestDiffUnitsAcrossThreeVersions(t *testing.T) {
	t.Parallel()
	_, call := threeVersions(t)
	cases := []struct {
		name   string
		args   map[string]any
		want   map[string]string
		counts UnitCounts
		from   string
	}{
		{"v1 to v2 (archived versions 2 and 3)", map[string]any{"path": "prd/goals.html", "from": 2, "to": 3},
			map[string]string{"scope": "changed", "login": "unchanged", "offline": "removed", "sharing": "added"},
			UnitCounts{Added: 1, Removed: 1, Changed: 1, Unchanged: 1}, "prd/goals.html@v2"},
		{"default: newest archived (v2) to current (v3)", map[string]any{"path": "prd/goals.html"},
			map[string]string{"scope": "unchanged", "login": "changed", "sharing": "unchanged"},
			UnitCounts{Changed: 1, Unchanged: 2}, "prd/goals.html@v3"},
		{"v1 to current", map[string]any{"path": "prd/goals.html", "from": 2},
			map[string]string{"scope": "changed", "login": "changed", "offline": "removed", "sharing": "added"},
			UnitCounts{Added: 1, Removed: 1, Changed: 2}, "prd/goals.html@v2"},
		{"to given, from defaults to the version before", map[string]any{"path": "prd/goals.html", "to": 3},
			map[string]string{"scope": "changed", "login": "unchanged", "offline": "removed", "sharing": "added"},
			UnitCounts{Added: 1, Removed: 1, Changed: 1, Unchanged: 1}, "prd/goals.html@v2"},
	}
	for _, tc := range cases {
		var o DiffUnitsOutput
		if err := json.Unmarshal(call("diff_units", tc.args), &o); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(statuses(o), tc.want) || o.Counts != tc.counts || o.From != tc.from {
			t.Errorf("%s: got %v %+v from %s, want %v %+v from %s", tc.name, statuses(o), o.Counts, o.From, tc.want, tc.counts, tc.from)
		}
	}
}

func TestDiffHTML(t *testing.T) {
	t.Parallel()
	_, call := threeVersions(t)
	var o DiffHTMLOutput
	if err := json.Unmarshal(call("diff_html", map[string]any{"path": "prd/goals.html", "from": 2, "to": 3}), &o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- prd/goals.html@v2", "+++ prd/goals.html@v3", "-Personal todo lists.", "+Personal and shared todo lists.",
		"-Offline", "-Works without network.", "+Sharing", "+Invite people by e-mail.", "+They can edit."} {
		if !strings.Contains(o.Diff, want+"\n") && !strings.Contains(o.Diff, want+"\t") {
			t.Errorf("diff lacks %q:\n%s", want, o.Diff)
		}
	}
	if o.Added != 4 || o.Removed != 3 {
		t.Errorf("added/removed = %d/%d, want 4/3", o.Added, o.Removed)
	}
	// v3 only wraps a word in <b> and renames a heading: markup alone is
	// not a text change.
	if err := json.Unmarshal(call("diff_html", map[string]any{"path": "prd/goals.html"}), &o); err != nil {
		t.Fatal(err)
	}
	if o.Added != 1 || o.Removed != 1 || !strings.Contains(o.Diff, "-Sign in\n") || !strings.Contains(o.Diff, "+Log in\n") {
		t.Errorf("v2→current: +%d -%d\n%s", o.Added, o.Removed, o.Diff)
	}
}

func TestDiffErrors(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "goals")
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"nothing archived", map[string]any{"path": "prd/goals.html"}, "no archived version"},
		{"unknown version", map[string]any{"path": "prd/goals.html", "from": 7}, "no archived version 7"},
		{"missing document", map[string]any{"path": "prd/none.html", "from": 1}, "no archived version 1"},
	}
	for _, tc := range cases {
		_, r, err := run[DiffUnitsOutput](t, c, DiffUnits(), tc.args)
		if err != nil || !r.Failed || !strings.Contains(r.Reason, tc.want) {
			t.Errorf("%s: err=%v reason=%q, want ok:false containing %q", tc.name, err, r.Reason, tc.want)
		}
	}
}

func TestEchoDiffSummaryAndTimeline(t *testing.T) {
	t.Parallel()
	p, call := threeVersions(t)
	var o EchoDiffOutput
	if err := json.Unmarshal(call("echo_diff", map[string]any{"path": "prd/goals.html", "from": 2, "to": 3}), &o); err != nil {
		t.Fatal(err)
	}
	want := "**prd/goals.html@v2 → @v3**: 1 added, 1 changed, 1 removed, 1 unchanged\n" +
		"- changed `scope` — Scope (+1/−1 lines)\n" +
		"- added `sharing` — Sharing\n" +
		"- removed `offline` — Offline\n"
	if o.Markdown != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", o.Markdown, want)
	}
	if o.Seq < 1 {
		t.Errorf("seq = %d", o.Seq)
	}
	lines := strings.Split(strings.TrimSpace(p.read("timeline.ndjson")), "\n")
	var e struct {
		Seq     int64  `json:"seq"`
		Kind    string `json:"kind"`
		Agent   string `json:"agent"`
		Message string `json:"message"`
		Data    struct {
			Path   string       `json:"path"`
			Counts UnitCounts   `json:"counts"`
			Units  []UnitChange `json:"units"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
		t.Fatal(err)
	}
	if e.Kind != "doc.diff" || e.Seq != o.Seq || e.Agent != "pm" || e.Message != want || e.Data.Path != "prd/goals.html" || len(e.Data.Units) != 3 {
		t.Errorf("timeline entry = %+v", e)
	}
}

// write_chapter archives what it writes: a hand edit afterwards is diffed
// against it, and archive_doc of the unchanged page, or of content equal to
// the newest archived version, adds no version.
func TestWriteChapterArchivesWhatItWrites(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("pm")
	bootstrapPRD(t, c, "goals")
	first := mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": section("Scope", "Lists and items.")})
	if first.Archived != 1 || first.Version != 2 {
		t.Fatalf("first write: archived %d, version %d; want the empty page as v1 and the write as v2", first.Archived, first.Version)
	}
	if got := p.read("archive/prd/goals.html/v2.html"); got != p.read("prd/goals.html") {
		t.Fatal("v2 is not the page write_chapter wrote")
	}
	again := mustRun[ArchiveOutput](t, c, ArchiveDoc(), map[string]any{"path": "prd/goals.html"})
	if again.Created || again.Version != 2 {
		t.Fatalf("archive_doc right after write_chapter = %+v; want version 2, nothing created", again)
	}
	same := mustRun[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": section("Scope", "Lists and items.")})
	if same.Version != 2 || same.Archived != 2 {
		t.Fatalf("rewriting the same content = %+v; want version 2 for both, no new version", same)
	}
	// The default diff right after a write shows that write.
	d := mustRun[DiffHTMLOutput](t, c, DiffHTML(), map[string]any{"path": "prd/goals.html"})
	if d.From != "prd/goals.html@v1" || d.Added == 0 {
		t.Fatalf("diff after write_chapter = %+v; want v1 → current with the added scope", d)
	}
	// A hand edit (the PM's own Edit tool) is diffed against what
	// write_chapter wrote.
	p.write("prd/goals.html", strings.Replace(p.read("prd/goals.html"), "Lists and items.", "Lists, items and due dates.", 1))
	d = mustRun[DiffHTMLOutput](t, c, DiffHTML(), map[string]any{"path": "prd/goals.html"})
	if d.From != "prd/goals.html@v2" || d.Added != 1 || d.Removed != 1 || !strings.Contains(d.Diff, "+Lists, items and due dates.") {
		t.Fatalf("diff after the hand edit = %+v; want v2 → current, the edited line only", d)
	}
	edited := mustRun[ArchiveOutput](t, c, ArchiveDoc(), map[string]any{"path": "prd/goals.html"})
	if !edited.Created || edited.Version != 3 {
		t.Fatalf("archive_doc of the hand edit = %+v; want a new version 3", edited)
	}
	if twice := mustRun[ArchiveOutput](t, c, ArchiveDoc(), map[string]any{"path": "prd/goals.html"}); twice.Created || twice.Version != 3 {
		t.Fatalf("archive_doc of unchanged content = %+v; want version 3 again, nothing created", twice)
	}
}

// An agent that may write a page but not its archive, or its archive but not
// the page, gets the sandbox's refusal from write_chapter and nothing
// changes: no page without its archive, no archive without its page.
func TestWriteChapterIsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		allow   []string
		refused string
	}{
		{[]string{"prd/**"}, "archive/prd/goals.html/"},
		{[]string{"archive/prd/**", "prd/index.html"}, "tried to write prd/goals.html"},
	} {
		t.Run(tc.allow[0], func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			bootstrapPRD(t, p.ctx("pm"), "goals")
			c := testutil.NewCtx(t, testutil.CtxOptions{Agent: "pm", Dir: p.dir, Clock: p.clock, AllowList: tc.allow})
			before := p.read("prd/goals.html")
			_, _, err := run[WriteOutput](t, c, WriteChapter(), map[string]any{"site": "prd", "chapter_id": "goals", "html": section("Scope", "x")})
			if !errors.Is(err, sandbox.ErrEscape) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("write_chapter = %v, want the sandbox refusing %s", err, tc.refused)
			}
			if p.read("prd/goals.html") != before {
				t.Fatal("the page was replaced although its archive was refused")
			}
			if _, err := os.Stat(p.path("archive")); !os.IsNotExist(err) {
				t.Fatalf("archive/ was created: %v", err)
			}
		})
	}
}

func section(heading, text string) string {
	return "<section><h2>" + heading + "</h2><p>" + text + "</p></section>"
}
