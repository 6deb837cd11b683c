package claudecode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/agents"
)

// Project is what toolhost init writes into one project.
type Project struct {
	// Dir is the absolute project directory.
	Dir string
	// Bin is the absolute path of the toolhost binary the CLI runs.
	Bin string
	// AgentsFile and PolicyFile are absolute paths passed on to serve and
	// the hook ("" for the embedded defaults).
	AgentsFile, PolicyFile string
	// Lead is the agent whose rules the project's hook applies to the main
	// thread ("": none, the CLI's own rules decide there).
	Lead string
	// Agents are the devloop's agents in loop order (the agents file's).
	Agents []Agent
	// Matcher is the PreToolUse matcher of every hook toolhost installs:
	// the built-ins the hook always checks and those a policy rule names.
	Matcher string
	// Env is given to every agent's server besides the log level: the
	// OTEL_* variables toolhost init ran with. Claude Code gives the MCP
	// servers it starts none of its own OTEL_* variables and expands no
	// ${VAR} in an agent's definition, so the values are written out.
	Env map[string]string
}

// Agent is one agent as its definition file describes it.
type Agent struct {
	*agents.Agent
	// Tools are the toolhost tools its server offers it, in toolPolicy
	// order.
	Tools []Tool
}

// Tool is a toolhost tool as the prompt names it.
type Tool struct {
	Name, Title string
}

// HookTimeout is the seconds the CLI waits for a toolhost hook. It is
// longer than the hook's own bound (5 s), so a hook that cannot decide in
// time denies instead of being cut off: a hook the CLI gives up on lets
// the call through.
const HookTimeout = 10

// SettingsPath is the project's shared settings file.
const SettingsPath = ".claude/settings.json"

// AgentPath is where an agent's definition lives in the project.
func AgentPath(a *agents.Agent) string { return ".claude/agents/" + a.Name + ".md" }

// ServerName is the name of an agent's own MCP server: its tools reach the
// model as mcp__<server>__<tool>.
func ServerName(a *agents.Agent) string { return "toolhost-" + a.Short }

// ToolName is the name the model calls a toolhost tool of agent a by.
func ToolName(a *agents.Agent, tool string) string { return "mcp__" + ServerName(a) + "__" + tool }

// step is a's 1-based place in the loop.
func (p *Project) step(a *Agent) int {
	for i := range p.Agents {
		if p.Agents[i].Name == a.Name {
			return i + 1
		}
	}
	return 0
}

// configArgs are the flags serve and the hook share.
func (p *Project) configArgs() []string {
	var args []string
	if p.AgentsFile != "" {
		args = append(args, "--agents", p.AgentsFile)
	}
	if p.PolicyFile != "" {
		args = append(args, "--policy", p.PolicyFile)
	}
	return args
}

// ServeArgs are the arguments of an agent's own server.
func (p *Project) ServeArgs(a *agents.Agent) []string {
	return append([]string{"serve", "--agent", a.Name, "--project-dir", p.Dir}, p.configArgs()...)
}

// AgentHook is the command of an agent's own PreToolUse hook.
func (p *Project) AgentHook(a *agents.Agent) string {
	return ShellJoin(append([]string{p.Bin, "hook", "pretooluse", "--agent", a.Name, "--project-dir", p.Dir}, p.configArgs()...))
}

// ProjectHook is the command of the project's PreToolUse hook: the agent
// is the payload's agent_type, the main thread's the lead.
func (p *Project) ProjectHook() string {
	args := append([]string{p.Bin, "hook", "pretooluse", "--project-dir", p.Dir}, p.configArgs()...)
	if p.Lead != "" {
		args = append(args, "--lead", p.Lead)
	}
	return ShellJoin(args)
}

// ShellJoin quotes args for a POSIX shell (the CLI runs a hook's command
// with one).
func ShellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// AgentFile renders a's definition: YAML frontmatter (every string a JSON
// string, which YAML reads as the same double-quoted scalar), toolhost's
// mark, then the system prompt.
func (p *Project) AgentFile(a *Agent) []byte {
	var b bytes.Buffer
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	q := func(s string) string { return string(quote(s)) }
	tools := append([]string{}, a.CLITools()...)
	for _, t := range a.Tools {
		tools = append(tools, ToolName(a.Agent, t.Name))
	}
	line("---")
	line("name: %s", q(a.Name))
	line("description: %s", q(p.description(a)))
	if a.CLI.Model != "" {
		line("model: %s", q(a.CLI.Model))
	}
	line("tools: %s", q(strings.Join(tools, ", ")))
	line("mcpServers:")
	line("  - %s:", q(ServerName(a.Agent)))
	line("      type: \"stdio\"")
	line("      command: %s", q(p.Bin))
	args := make([]string, 0, 8)
	for _, s := range p.ServeArgs(a.Agent) {
		args = append(args, q(s))
	}
	line("      args: [%s]", strings.Join(args, ", "))
	line("      env:")
	// warn: the CLI files a stdio server's stderr lines under "error".
	line("        TOOLHOST_LOG_LEVEL: \"warn\"")
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		line("        %s: %s", q(k), q(p.Env[k]))
	}
	line("hooks:")
	line("  PreToolUse:")
	line("    - matcher: %s", q(p.Matcher))
	line("      hooks:")
	line("        - type: \"command\"")
	line("          command: %s", q(p.AgentHook(a.Agent)))
	line("          timeout: %d", HookTimeout)
	line("---")
	b.WriteString(p.prompt(a))
	return stamp(b.Bytes())
}

// markPrefix starts the YAML comment line that marks a file toolhost init
// wrote, with the sha256 of the file without that line.
const markPrefix = "# toolhost init wrote this file; edited, toolhost init leaves it alone (--force rewrites it). sha256:"

// stamp puts the mark in as the frontmatter's last line.
func stamp(b []byte) []byte {
	sum := sha256.Sum256(b)
	end := bytes.Index(b[4:], []byte("\n---\n")) + 4 + 1
	out := append([]byte{}, b[:end]...)
	out = append(out, markPrefix+hex.EncodeToString(sum[:])+"\n"...)
	return append(out, b[end:]...)
}

// Written says whether data carries toolhost init's mark, and whether it
// was changed since init wrote it.
func Written(data []byte) (ours, edited bool) {
	i := bytes.Index(data, []byte("\n"+markPrefix))
	if i < 0 {
		return false, false
	}
	start := i + 1
	end := bytes.IndexByte(data[start:], '\n')
	if end < 0 {
		return true, true
	}
	end += start
	want := string(data[start+len(markPrefix) : end])
	rest := append(append([]byte{}, data[:start]...), data[end+1:]...)
	sum := sha256.Sum256(rest)
	return true, hex.EncodeToString(sum[:]) != want
}
