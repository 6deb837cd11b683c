package agents

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseRefusesBadTemplates(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, doc, want string }{
		{"not JSON", `{"agents": [`, "agents file: unexpected EOF"},
		{"unknown field", `{"agents":[{"name":"a","short":"a","tools":[]}]}`, `agents file: json: unknown field "tools"`},
		{"no short name", `{"agents":[{"name":"devloop-a"}]}`, "agents file: agents[0]: name and short are required"},
		{"the same name twice", `{"agents":[{"name":"devloop-a","short":"a"},{"name":"devloop-a","short":"b"}]}`, `agents file: agent "devloop-a" defined twice`},
		{"a short name that is another's name", `{"agents":[{"name":"a","short":"x"},{"name":"devloop-b","short":"a"}]}`, `agents file: agent "devloop-b" defined twice`},
		{"an absolute allow-list pattern", `{"agents":[{"name":"a","short":"a","sandbox":{"writeAllowList":["/etc/**"]}}]}`, `agents file: a: writeAllowList pattern "/etc/**" must be a relative glob`},
		{"a broken glob", `{"agents":[{"name":"a","short":"a","sandbox":{"writeAllowList":["prd/[x"]}}]}`, `agents file: a: writeAllowList pattern "prd/[x" must be a relative glob`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse([]byte(tc.doc)); err == nil || err.Error() != tc.want {
				t.Fatalf("Parse = %v; want %q", err, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	set, err := Load("")
	if err != nil {
		t.Fatalf("the embedded agents do not load: %v", err)
	}
	want := []string{"devloop-architect", "devloop-bug-triager", "devloop-coder", "devloop-integrator", "devloop-pm", "devloop-tester"}
	if got := set.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names = %v; want %v (sorted)", got, want)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(file, []byte(`{"agents":[{"name":"devloop-solo","short":"solo"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if set, err := Load(file); err != nil || len(set.List) != 1 || set.List[0].Short != "solo" {
		t.Fatalf("Load(%s) = %+v, %v", file, set, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.HasPrefix(err.Error(), "agents file: open ") {
		t.Fatalf("Load(missing) = %v", err)
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	set, err := Parse([]byte(`{"agents":[{"name":"devloop-pm","short":"pm"},{"name":"devloop-coder","short":"coder"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"devloop-pm", "pm"} {
		if a, err := set.Find(name); err != nil || a.Name != "devloop-pm" {
			t.Errorf("Find(%q) = %+v, %v", name, a, err)
		}
	}
	if _, err := set.Find("ceo"); err == nil || err.Error() != `unknown agent "ceo" (known: devloop-coder, devloop-pm)` {
		t.Errorf("Find(ceo) = %v", err)
	}
}

func TestToolPolicy(t *testing.T) {
	t.Parallel()
	a := &Agent{Name: "devloop-coder"}
	a.CLI.ToolPolicy = []string{"Read", "write_todolist", "github__*", "Bash", "docs__get_?", "bash"}
	cases := []struct {
		tool  string
		allow bool
	}{
		{"write_todolist", true},
		{"bash", true},
		{"Bash", true},
		{"github__search_issues", true},
		{"docs__get_a", true},
		{"docs__get_ab", false},
		{"write_todolist2", false},
		{"gitlab__search", false},
		{"Write", false},
		{"", false},
	}
	for _, tc := range cases {
		if got := a.Allows(tc.tool); got != tc.allow {
			t.Errorf("Allows(%q) = %t, want %t", tc.tool, got, tc.allow)
		}
	}
	if got, want := a.MCPTools(), []string{"write_todolist", "github__*", "docs__get_?", "bash"}; !slices.Equal(got, want) {
		t.Errorf("MCPTools = %v, want %v (toolPolicy order)", got, want)
	}
	if got, want := a.CLITools(), []string{"Read", "Bash"}; !slices.Equal(got, want) {
		t.Errorf("CLITools = %v, want %v", got, want)
	}
}

func TestCwd(t *testing.T) {
	t.Parallel()
	cases := []struct{ template, company, project, unit, want string }{
		{".", "c1", "p-1", "todo-be", "."},
		{"units/{unit_id}", "c1", "p-1", "todo-be", "units/todo-be"},
		{"units/{unit_id}", "c1", "p-1", "", "."},
		{"companies/{cid}/projects/{pid}/", "c1", "p-1", "", "companies/c1/projects/p-1"},
		{"work/./{pid}/../{unit_id}", "", "p-1", "api", "work/api"},
	}
	for _, tc := range cases {
		a := &Agent{}
		a.Sandbox.Cwd = tc.template
		if got := a.Cwd(tc.company, tc.project, tc.unit); got != tc.want {
			t.Errorf("Cwd(%q, %q, %q) of %q = %q, want %q", tc.company, tc.project, tc.unit, tc.template, got, tc.want)
		}
	}
}
