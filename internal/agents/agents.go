package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
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
	Sandbox Sandbox `json:"sandbox"`
}

// Sandbox is where an agent works and what it may touch. WriteAllowList
// governs toolhost's own writes (the sandbox door) and, narrowed to what
// Landlock can express, every command the agent starts (internal/confine).
type Sandbox struct {
	// Cwd is the working directory template (relative to the project dir).
	Cwd string `json:"cwd"`
	// WriteAllowList are doublestar globs relative to the project dir.
	WriteAllowList []string `json:"writeAllowList"`
	// ReadAllowList, when set, limits what the agent's commands may read
	// and execute to these globs (relative to the project dir, or absolute
	// for paths outside it), the write roots and the system directories a
	// program needs to run; unset, commands read everywhere.
	ReadAllowList []string `json:"readAllowList,omitempty"`
	// Commands says what happens to a command when the kernel cannot
	// confine it: CommandsRequire (the default), CommandsBestEffort or
	// CommandsOff (never confined).
	Commands string `json:"commands,omitempty"`
	// Network limits the TCP ports the agent's commands may connect to and
	// bind; unset rules mean any port.
	Network Network `json:"network,omitzero"`
	// Env are the variables (names, or patterns such as NODE_*) the
	// agent's commands receive from toolhost's environment besides the
	// few every command gets (PATH, HOME, the locale …). A pattern never
	// passes a name that looks like a credential; name one exactly.
	Env []string `json:"env,omitempty"`
}

// The values of Sandbox.Commands.
const (
	// CommandsRequire refuses a command that cannot be confined.
	CommandsRequire = "require"
	// CommandsBestEffort runs it with what the kernel can enforce (maybe
	// nothing) and says so in the result and the audit row.
	CommandsBestEffort = "best-effort"
	// CommandsOff never confines the agent's commands.
	CommandsOff = "off"
)

// Network are the TCP rules of an agent's commands.
type Network struct {
	// Connect is what commands may connect to (default any).
	Connect Ports `json:"connect,omitzero"`
	// Bind is what commands may listen on (default any).
	Bind Ports `json:"bind,omitzero"`
	// UnitBind is what a unit started by spawn_units may listen on: "own"
	// (the default: only the port it was given), "any" or a list.
	UnitBind Ports `json:"unitBind,omitzero"`
	// ReachToolhost lets the commands connect to toolhost's own servers (a
	// loopback serve --http, toolhost dashboard), whose ports they are
	// otherwise refused.
	ReachToolhost bool `json:"reachToolhost,omitempty"`
}

// Ports is a TCP port rule: "any", "own" (UnitBind only) or a list of ports
// (an empty list allows none; 0 is the kernel's pick of a free port).
type Ports struct {
	Any  bool
	Own  bool
	List []int
	set  bool
}

// IsZero reports whether the rule was left out (its default applies).
func (p Ports) IsZero() bool { return !p.set && !p.Any && !p.Own && p.List == nil }

// String renders the rule as written in the agents file.
func (p Ports) String() string {
	switch {
	case p.Any:
		return "any"
	case p.Own:
		return "own"
	case len(p.List) == 0:
		return "none"
	}
	s := make([]string, len(p.List))
	for i, n := range p.List {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// MarshalJSON writes "any", "own" or the list.
func (p Ports) MarshalJSON() ([]byte, error) {
	switch {
	case p.Any:
		return []byte(`"any"`), nil
	case p.Own:
		return []byte(`"own"`), nil
	}
	return json.Marshal(append([]int{}, p.List...))
}

// UnmarshalJSON reads "any", "own" or a list of ports 0-65535.
func (p *Ports) UnmarshalJSON(b []byte) error {
	var word string
	if err := json.Unmarshal(b, &word); err == nil {
		switch word {
		case "any":
			*p = Ports{Any: true, set: true}
		case "own":
			*p = Ports{Own: true, set: true}
		default:
			return fmt.Errorf("port rule %q: want \"any\", \"own\" or a list of ports", word)
		}
		return nil
	}
	var list []int
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("port rule %s: want \"any\", \"own\" or a list of ports", b)
	}
	for _, n := range list {
		if n < 0 || n > 65535 {
			return fmt.Errorf("port rule: %d is not a TCP port (0-65535)", n)
		}
	}
	*p = Ports{List: append([]int{}, list...), set: true}
	return nil
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
		if err := a.Sandbox.check(); err != nil {
			return nil, fmt.Errorf("agents file: %s: %w", a.Name, err)
		}
	}
	return &s, nil
}

// check validates the sandbox settings and fills in the defaults.
func (s *Sandbox) check() error {
	for _, p := range s.WriteAllowList {
		if !doublestar.ValidatePattern(p) || strings.HasPrefix(p, "/") {
			return fmt.Errorf("writeAllowList pattern %q must be a relative glob", p)
		}
	}
	for _, p := range s.ReadAllowList {
		if !doublestar.ValidatePattern(p) {
			return fmt.Errorf("readAllowList pattern %q is not a valid glob", p)
		}
	}
	for _, p := range s.Env {
		if err := ValidEnvPattern(p); err != nil {
			return fmt.Errorf("sandbox.%w", err)
		}
	}
	switch s.Commands {
	case "":
		s.Commands = CommandsRequire
	case CommandsRequire, CommandsBestEffort, CommandsOff:
	default:
		return fmt.Errorf("sandbox.commands %q must be %q, %q or %q", s.Commands, CommandsRequire, CommandsBestEffort, CommandsOff)
	}
	if s.Network.Connect.Own || s.Network.Bind.Own {
		return fmt.Errorf(`sandbox.network: "own" is only for unitBind (a unit's own port); connect and bind take "any" or a list of ports`)
	}
	s.Network = s.Network.WithDefaults()
	return nil
}

// ValidEnvPattern checks one entry of a sandbox's env list: a variable name or a
// glob over names.
func ValidEnvPattern(p string) error {
	if p == "" || strings.ContainsAny(p, "=\x00") {
		return fmt.Errorf("env %q: want a variable name or a pattern such as NODE_*", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("env %q: %v", p, err)
	}
	return nil
}

// WithDefaults fills the rules left out: connect and bind any, unitBind
// own.
func (n Network) WithDefaults() Network {
	if n.Connect.IsZero() {
		n.Connect = Ports{Any: true, set: true}
	}
	if n.Bind.IsZero() {
		n.Bind = Ports{Any: true, set: true}
	}
	if n.UnitBind.IsZero() {
		n.UnitBind = Ports{Own: true, set: true}
	}
	return n
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
