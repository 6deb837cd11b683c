package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolhost/toolhost/configs"
)

// Agent is one agent template.
type Agent struct {
	Name       string   `json:"name"`
	Short      string   `json:"short"`
	Loop       string   `json:"loop"`
	Upstream   []string `json:"upstream"`
	Downstream []string `json:"downstream"`
	CLI        struct {
		Model      string   `json:"model"`
		ToolPolicy []string `json:"toolPolicy"`
	} `json:"cli"`
	Sandbox struct {
		Cwd            string   `json:"cwd"`
		WriteAllowList []string `json:"writeAllowList"`
	} `json:"sandbox"`
}

// BuiltinCLITools are the agent CLI's own tools a toolPolicy may name.
var BuiltinCLITools = map[string]bool{
	"Read": true, "Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true,
	"Bash": true, "Glob": true, "Grep": true, "LS": true, "WebFetch": true, "WebSearch": true,
	"TodoWrite": true, "Task": true,
}

// Allows reports whether the toolPolicy names tool (entries may be globs such
// as "github__*" for upstream tools).
func (a *Agent) Allows(tool string) bool {
	for _, p := range a.CLI.ToolPolicy {
		if p == tool {
			return true
		}
		if strings.ContainsAny(p, "*?[") {
			if ok, _ := path.Match(p, tool); ok {
				return true
			}
		}
	}
	return false
}

// MCPTools returns the toolPolicy entries that are not CLI built-ins.
func (a *Agent) MCPTools() []string {
	var out []string
	for _, t := range a.CLI.ToolPolicy {
		if !BuiltinCLITools[t] {
			out = append(out, t)
		}
	}
	return out
}

// CLITools returns the CLI built-ins the toolPolicy names.
func (a *Agent) CLITools() []string {
	var out []string
	for _, t := range a.CLI.ToolPolicy {
		if BuiltinCLITools[t] {
			out = append(out, t)
		}
	}
	return out
}

// Cwd expands the cwd template (relative to the project dir).
func (a *Agent) Cwd(company, project, unit string) string {
	r := strings.NewReplacer("{cid}", company, "{pid}", project, "{unit_id}", unit)
	cwd := r.Replace(a.Sandbox.Cwd)
	if unit == "" && strings.Contains(a.Sandbox.Cwd, "{unit_id}") {
		cwd = "."
	}
	return path.Clean(cwd)
}

// Set is the loaded templates.
type Set struct {
	List []*Agent `json:"agents"`
}

// Load parses agents JSON; an empty path means the embedded default.
func Load(file string) (*Set, error) {
	data := configs.AgentsJSON
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("agents file: %w", err)
		}
		data = b
	}
	return Parse(data)
}

// Parse parses and checks an agents document.
func Parse(data []byte) (*Set, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Set
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	seen := map[string]bool{}
	for i, a := range s.List {
		if a.Name == "" || a.Short == "" {
			return nil, fmt.Errorf("agents file: agents[%d]: name and short are required", i)
		}
		if seen[a.Name] || seen[a.Short] {
			return nil, fmt.Errorf("agents file: agent %q defined twice", a.Name)
		}
		seen[a.Name], seen[a.Short] = true, true
		for _, p := range a.Sandbox.WriteAllowList {
			if !doublestar.ValidatePattern(p) || strings.HasPrefix(p, "/") {
				return nil, fmt.Errorf("agents file: %s: writeAllowList pattern %q must be a relative glob", a.Name, p)
			}
		}
	}
	return &s, nil
}

// Find returns the agent named name (template name or short name).
func (s *Set) Find(name string) (*Agent, error) {
	for _, a := range s.List {
		if a.Name == name || a.Short == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("unknown agent %q (known: %s)", name, strings.Join(s.Names(), ", "))
}

// Names returns the template names, sorted.
func (s *Set) Names() []string {
	var n []string
	for _, a := range s.List {
		n = append(n, a.Name)
	}
	sort.Strings(n)
	return n
}
