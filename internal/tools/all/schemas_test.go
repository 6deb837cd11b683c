package all

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/tool"
)

var update = flag.Bool("update", false, "rewrite schemas/")

// TestGoldenSchemas pins what the model sees of every tool: a tag edit that
// changes a schema shows up in review as a change under schemas/. The same
// files are embedded and served (Tools), so they must equal what reflection
// of the Go types produces: build() reflects, it does not read them.
func TestGoldenSchemas(t *testing.T) {
	dir := "schemas"
	seen := map[string]bool{}
	for _, tl := range build() {
		s := tl.Spec()
		seen[s.Name+".json"] = true
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{
			"name": s.Name, "description": s.Description, "annotations": s.Annotations(),
			"inputSchema": s.InputSchema, "outputSchema": s.OutputSchema,
		}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, s.Name+".json")
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: no schema file (run go test ./internal/tools/all -update): %v", s.Name, err)
			continue
		}
		if !bytes.Equal(want, buf.Bytes()) {
			t.Errorf("%s: schema differs from %s (run with -update if intended)\n%s", s.Name, path, buf.String())
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			if *update {
				_ = os.Remove(f)
				continue
			}
			t.Errorf("%s has no tool; remove it", f)
		}
	}
}

// TestServedSchemasAreTheGoldenOnes: Tools() serves the embedded schemas,
// and they are the reflected ones.
func TestServedSchemasAreTheGoldenOnes(t *testing.T) {
	reflected := build()
	for i, tl := range Tools() {
		got, want := tl.Spec(), reflected[i].Spec()
		if !bytes.Equal(got.InputSchema, want.InputSchema) || !bytes.Equal(got.OutputSchema, want.OutputSchema) {
			t.Errorf("%s: served schema differs from reflection; run go test ./internal/tools/all -update", got.Name)
		}
	}
}

// TestToolContract checks what every client relies on: valid names, a
// top-level object input schema without $ref that forbids extra properties,
// an output schema that accepts {ok:false}, a description.
func TestToolContract(t *testing.T) {
	reg := Registry() // panics on duplicates or schemas that do not compile
	for _, e := range reg.List() {
		s := e.Spec
		if !tool.NamePattern().MatchString(s.Name) {
			t.Errorf("%s: bad name", s.Name)
		}
		if len(s.Description) < 20 {
			t.Errorf("%s: description too short to guide a model", s.Name)
		}
		var in map[string]any
		if err := json.Unmarshal(s.InputSchema, &in); err != nil {
			t.Fatal(err)
		}
		if in["type"] != "object" || in["$ref"] != nil || in["additionalProperties"] != false {
			t.Errorf("%s: input schema must be a top-level object with additionalProperties false and no $ref: %s", s.Name, s.InputSchema)
		}
		if props, _ := in["properties"].(map[string]any); len(props) > 0 {
			for name, p := range props {
				if d, _ := p.(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s.%s: input field has no description", s.Name, name)
				}
			}
		}
		if _, err := registry.Compile(s.OutputSchema); err != nil {
			t.Errorf("%s: output schema does not compile: %v", s.Name, err)
		}
		var out map[string]any
		_ = json.Unmarshal(s.OutputSchema, &out)
		if req, _ := out["required"].([]any); len(req) != 1 || req[0] != "ok" {
			t.Errorf("%s: output schema must require exactly ok (so ok:false validates): %v", s.Name, out["required"])
		}
	}
}

// TestConfigsNameRealTools keeps configs honest: every tool the embedded
// policy or an agent names exists (or is a CLI built-in), and every built-in
// tool is listed in the policy and given to at least one agent.
func TestConfigsNameRealTools(t *testing.T) {
	reg := Registry()
	set, err := agents.Parse(configs.AgentsJSON)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(configs.ToolsJSON)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, a := range set.List {
		for _, name := range a.MCPTools() {
			used[name] = true
			if _, ok := reg.Lookup(name); !ok {
				t.Errorf("agent %s names unknown tool %s", a.Name, name)
			}
		}
	}
	var names []string
	for name := range pol.Tools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := reg.Lookup(name); !ok {
			t.Errorf("tools.json lists unknown tool %s", name)
		}
	}
	for _, e := range reg.List() {
		if strings.HasPrefix(e.Spec.Name, "debug_") {
			continue
		}
		if _, ok := pol.Tools[e.Spec.Name]; !ok {
			t.Errorf("tool %s is not in configs/tools.json", e.Spec.Name)
		}
		if !used[e.Spec.Name] {
			t.Errorf("tool %s is given to no agent", e.Spec.Name)
		}
	}
}

// TestPolicyMatchesEffects: the embedded policy gives "read" (retried on
// transient faults, listed as read-only) exactly to the tools that declare
// they change nothing.
func TestPolicyMatchesEffects(t *testing.T) {
	pol, err := policy.Parse(configs.ToolsJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range Tools() {
		s := tl.Spec()
		rule, ok := pol.Tools[s.Name]
		if !ok {
			continue // TestConfigsNameRealTools reports it
		}
		if want := s.Effect.String(); rule.Permission != want {
			t.Errorf("%s: tools.json permission %q, but the tool's effect means %q", s.Name, rule.Permission, want)
		}
	}
}
