package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/claudecode"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/stdioclient"
)

// TestedClaudeVersion is the Claude CLI release toolhost's tests drive
// (scripts/deps/40-claude-code.sh pins it).
const TestedClaudeVersion = "2.1.332"

// doctorTimeout bounds each check that starts a program.
const doctorTimeout = 30 * time.Second

// doctorCheck is one line of toolhost doctor's report.
type doctorCheck struct {
	name   string
	failed bool
	// warn is a finding that works but deserves a look.
	warn   bool
	detail string
	fix    string
}

func newDoctorCmd(_ *globals) *cobra.Command {
	var f projectFlags
	var claude string
	cmd := &cobra.Command{
		Use:   "doctor [--project-dir D] [--claude PATH]",
		Short: "Check that claude will run the project's devloop agents: the CLI, the trusted folder, Landlock, each agent's server and hook",
		Long: "doctor checks a project set up by toolhost init, end to end, and says how to fix what fails: the Claude CLI is\n" +
			"there and its version; the files toolhost init writes are what it would write; Claude Code trusts the project folder\n" +
			"(it loads a project agent's MCP servers and hooks only then); the kernel can confine each agent's commands (Landlock);\n" +
			"each agent's own server, started as its definition says, answers and lists the tools the definition names; and each\n" +
			"hook (every agent's and the project's) answers a probe by denying a write into toolhost's own store within its timeout.\n" +
			"It exits 1 when any check fails.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.project()
			if err != nil {
				return err
			}
			checks := runDoctor(cmd.Context(), p, claude)
			failed := writeDoctor(cmd.OutOrStdout(), checks)
			if failed > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d check(s) failed", failed)}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&claude, "claude", "", "the claude executable (default: claude on PATH)")
	return cmd
}

func writeDoctor(w io.Writer, checks []doctorCheck) int {
	failed := 0
	for _, c := range checks {
		mark := "ok  "
		switch {
		case c.failed:
			mark = "FAIL"
			failed++
		case c.warn:
			mark = "warn"
		}
		fmt.Fprintf(w, "%s %s: %s\n", mark, c.name, c.detail)
		if c.fix != "" && (c.failed || c.warn) {
			fmt.Fprintf(w, "     fix: %s\n", c.fix)
		}
	}
	return failed
}

func runDoctor(ctx context.Context, p *claudecode.Project, claude string) []doctorCheck {
	if ctx == nil {
		ctx = context.Background()
	}
	checks := []doctorCheck{checkClaude(ctx, claude), checkInitFiles(p), checkTrust(p.Dir)}
	checks = append(checks, checkConfinement(p)...)
	for _, a := range p.Agents {
		checks = append(checks, checkAgent(ctx, p, a.Agent)...)
	}
	return append(checks, checkProjectHook(ctx, p))
}

func checkClaude(ctx context.Context, claude string) doctorCheck {
	c := doctorCheck{name: "claude"}
	install := "install the Claude CLI (npm install -g @anthropic-ai/claude-code@" + TestedClaudeVersion + ", the version toolhost is tested with), or name it with --claude"
	if claude == "" {
		path, err := exec.LookPath("claude")
		if err != nil {
			c.failed, c.detail, c.fix = true, "no claude on PATH", install
			return c
		}
		claude = path
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, claude, "--version").CombinedOutput()
	version := strings.TrimSpace(string(out))
	if err != nil {
		c.failed, c.detail, c.fix = true, fmt.Sprintf("%s --version failed (%v): %s", claude, err, version), install
		return c
	}
	c.detail = fmt.Sprintf("%s (%s)", version, claude)
	if !strings.HasPrefix(version, TestedClaudeVersion+" ") && version != TestedClaudeVersion {
		c.warn = true
		c.fix = "toolhost is tested with " + TestedClaudeVersion + "; another version may load agents, hooks or MCP servers differently (docs/claude-cli.md lists what toolhost relies on)"
	}
	return c
}

func checkInitFiles(p *claudecode.Project) doctorCheck {
	c := doctorCheck{name: "toolhost init"}
	files, err := planInit(p)
	if err != nil {
		c.failed, c.detail, c.fix = true, err.Error(), "fix the file named, then run toolhost init"
		return c
	}
	var differ []string
	for _, f := range files {
		if f.state != fileSame {
			differ = append(differ, f.rel+" ("+f.state+")")
		}
	}
	if len(differ) > 0 {
		c.failed, c.detail = true, "differs from what toolhost init would write: "+strings.Join(differ, ", ")
		c.fix = "run toolhost init in " + p.Dir + " (with the same --agents, --policy and --lead; --force also replaces files it did not write or that were edited)"
		return c
	}
	c.detail = fmt.Sprintf("%d agents and %s as toolhost init writes them", len(p.Agents), claudecode.SettingsPath)
	return c
}

func checkTrust(dir string) doctorCheck {
	c := doctorCheck{name: "trusted folder"}
	t, err := claudecode.TrustOf(dir, os.Getenv)
	switch {
	case err != nil:
		c.failed, c.detail, c.fix = true, err.Error(), "fix Claude Code's config file"
	case !t.Trusted():
		c.failed = true
		c.detail = fmt.Sprintf("Claude Code does not trust %s (no projects[...].hasTrustDialogAccepted in %s): it skips the agents' MCP servers, their hooks and the project's permission rules", dir, t.Config)
		c.fix = claudecode.TrustFix(dir, t.Config)
	default:
		c.detail = fmt.Sprintf("%s is trusted (projects[%q] in %s)", dir, t.Folder, t.Config)
	}
	return c
}

// checkConfinement builds each agent's confinement as the hook and the
// bash tool do: an agent whose commands must be confined and cannot be
// fails.
func checkConfinement(p *claudecode.Project) []doctorCheck {
	k := confine.Detect()
	c := doctorCheck{name: "landlock", detail: fmt.Sprintf("Landlock ABI %d", k.ABI)}
	if k.ABI < 1 {
		c.detail = "no Landlock: " + k.Reason
		c.warn = true
	}
	checks := []doctorCheck{c}
	for _, a := range p.Agents {
		if !a.Allows("Bash") && !a.Allows("bash") {
			continue
		}
		plan, err := confine.Prepare(confine.Request{Agent: a.Name, Sandbox: a.Sandbox, ProjectDir: p.Dir})
		ac := doctorCheck{name: a.Name + " commands"}
		switch {
		case err != nil:
			ac.failed, ac.detail = true, err.Error()
			ac.fix = "run on Linux 5.13 or later with Landlock enabled (toolhost sandbox probe), or change sandbox.commands of " + a.Name + " in the agents file"
		case !plan.Confined():
			ac.warn, ac.detail = true, "run unconfined: "+plan.Unconfined
		default:
			ac.detail = "confined: " + plan.String()
		}
		if plan != nil {
			plan.Close()
		}
		checks = append(checks, ac)
	}
	return checks
}

// agentDefinition is what doctor reads of an agent's file: its frontmatter.
type agentDefinition struct {
	Name       string                      `yaml:"name"`
	Tools      string                      `yaml:"tools"`
	MCPServers []map[string]mcpServerEntry `yaml:"mcpServers"`
	Hooks      map[string][]struct {
		Matcher string      `yaml:"matcher"`
		Hooks   []hookEntry `yaml:"hooks"`
	} `yaml:"hooks"`
}

type mcpServerEntry struct {
	Type    string            `yaml:"type"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
}

type hookEntry struct {
	Type    string `yaml:"type" json:"type"`
	Command string `yaml:"command" json:"command"`
	Timeout int    `yaml:"timeout" json:"timeout"`
}

// readDefinition parses the frontmatter of an agent's file.
func readDefinition(dir string, a *agents.Agent) (*agentDefinition, error) {
	data, err := readProjectFile(dir, claudecode.AgentPath(a))
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	end := bytes.Index(rest, []byte("\n---\n"))
	if !ok || end < 0 {
		return nil, errors.New("no YAML frontmatter between --- lines")
	}
	var d agentDefinition
	if err := yaml.Unmarshal(rest[:end], &d); err != nil {
		return nil, fmt.Errorf("frontmatter: %v", err)
	}
	return &d, nil
}

// checkAgent starts each MCP server of a's definition as the CLI would and
// lists its tools, and probes each of its PreToolUse hooks.
func checkAgent(ctx context.Context, p *claudecode.Project, a *agents.Agent) []doctorCheck {
	rel := claudecode.AgentPath(a)
	d, err := readDefinition(p.Dir, a)
	if err != nil {
		fix := "run toolhost init"
		if errors.Is(err, fs.ErrNotExist) {
			err = errors.New(rel + " does not exist")
		}
		return []doctorCheck{{name: a.Name, failed: true, detail: err.Error(), fix: fix}}
	}
	var checks []doctorCheck
	want := map[string][]string{}
	for _, t := range strings.Split(d.Tools, ",") {
		t = strings.TrimSpace(t)
		if server, tool, ok := strings.Cut(strings.TrimPrefix(t, "mcp__"), "__"); ok && strings.HasPrefix(t, "mcp__") {
			want[server] = append(want[server], tool)
		}
	}
	if len(d.MCPServers) == 0 {
		checks = append(checks, doctorCheck{name: a.Name + " server", failed: true, detail: rel + " names no mcpServers", fix: "run toolhost init --force"})
	}
	for _, entry := range d.MCPServers {
		for name, s := range entry {
			checks = append(checks, checkServer(ctx, a.Name, name, s, want[name]))
		}
	}
	hooks := 0
	for _, m := range d.Hooks["PreToolUse"] {
		for _, h := range m.Hooks {
			hooks++
			checks = append(checks, checkHook(ctx, p, a.Name+" hook", h, a.Name))
		}
	}
	if hooks == 0 {
		checks = append(checks, doctorCheck{name: a.Name + " hook", failed: true, detail: rel + " has no PreToolUse hook: the CLI's Bash and writes of " + a.Name + " go unchecked under --bare", fix: "run toolhost init --force"})
	}
	return checks
}

func checkServer(ctx context.Context, agent, name string, s mcpServerEntry, want []string) doctorCheck {
	c := doctorCheck{name: agent + " server " + name}
	if s.Type != "" && s.Type != "stdio" {
		c.warn, c.detail = true, "a "+s.Type+" server is not checked"
		return c
	}
	env := os.Environ()
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	client, err := stdioclient.Start(s.Command, s.Args, env)
	if err != nil {
		c.failed, c.detail, c.fix = true, fmt.Sprintf("cannot start %s: %v", s.Command, err), "run toolhost init again from the toolhost you want the agents to run"
		return c
	}
	defer client.Close(5 * time.Second)
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	if _, err := client.Initialize(ctx, "2025-11-25", nil); err != nil {
		c.failed, c.detail = true, fmt.Sprintf("does not answer initialize: %v; its log: %s", err, lastLines(client.Stderr(), 5))
		c.fix = "run the server's command by hand to see why: " + claudecode.ShellJoin(append([]string{s.Command}, s.Args...))
		return c
	}
	raw, err := client.Call(ctx, "tools/list", map[string]any{})
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &list)
	}
	if err != nil {
		c.failed, c.detail = true, fmt.Sprintf("tools/list: %v", err)
		return c
	}
	var have []string
	for _, t := range list.Tools {
		have = append(have, t.Name)
	}
	var missing []string
	for _, t := range want {
		if !slices.Contains(have, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		c.failed = true
		c.detail = fmt.Sprintf("lists %d tools, not the definition's %s", len(have), strings.Join(missing, ", "))
		c.fix = "run toolhost init with the agents and policy files the server runs with"
		return c
	}
	c.detail = fmt.Sprintf("starts and lists %d tools", len(have))
	return c
}

// checkHook feeds a hook the payload of a Write into toolhost's own store
// by agent (the main thread when agent is ""), as the CLI would, and wants
// a deny within the hook's timeout; wantNone is a project hook without a
// lead, which rightly decides nothing about the main thread.
func checkHook(ctx context.Context, p *claudecode.Project, name string, h hookEntry, agent string) doctorCheck {
	c := doctorCheck{name: name}
	if h.Type != "command" {
		c.warn, c.detail = true, "a "+h.Type+" hook is not checked"
		return c
	}
	if h.Timeout <= 0 {
		c.warn = true
		c.fix = "give the hook a timeout (toolhost init writes " + fmt.Sprint(claudecode.HookTimeout) + "): the CLI's default wait is long, and a hook it gives up on lets the call through"
	}
	in := map[string]any{"session_id": "toolhost-doctor", "cwd": p.Dir, "hook_event_name": "PreToolUse", "tool_name": "Write",
		"tool_input": map[string]any{"file_path": p.Dir + "/.toolhost/doctor-probe", "content": "x"}, "tool_use_id": "toolhost-doctor-probe"}
	if agent != "" {
		in["agent_type"] = agent
	}
	payload, _ := json.Marshal(in)
	timeout := time.Duration(h.Timeout) * time.Second
	if timeout <= 0 {
		timeout = doctorTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", h.Command)
	cmd.Dir = p.Dir
	cmd.Stdin = bytes.NewReader(payload)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start).Round(time.Millisecond)
	var d struct {
		HookSpecificOutput struct{ PermissionDecision, PermissionDecisionReason string } `json:"hookSpecificOutput"`
	}
	switch {
	case ctx.Err() != nil:
		c.failed, c.detail = true, fmt.Sprintf("no answer within its timeout (%v): the CLI would let the call through", timeout)
	case err != nil:
		c.failed, c.detail = true, fmt.Sprintf("exited with %v: %s", err, lastLines(stderr.String(), 3))
	case agent == "" && p.Lead == "" && len(bytes.TrimSpace(out)) == 0:
		c.detail = fmt.Sprintf("answers in %v; it leaves the main thread to the CLI's own rules (toolhost init --lead AGENT checks it as that agent)", took)
		return c
	case json.Unmarshal(out, &d) != nil || d.HookSpecificOutput.PermissionDecision != "deny":
		c.failed, c.detail = true, fmt.Sprintf("did not deny a write into .toolhost/ (answered %q)", strings.TrimSpace(string(out)))
	default:
		c.detail = fmt.Sprintf("answers in %v (a write into .toolhost/ denied)", took)
		return c
	}
	c.fix = "run the hook's command by hand with a PreToolUse payload on stdin: " + h.Command
	return c
}

// checkProjectHook probes the project's hook in the settings.
func checkProjectHook(ctx context.Context, p *claudecode.Project) doctorCheck {
	var s struct {
		Hooks map[string][]struct {
			Hooks []hookEntry `json:"hooks"`
		} `json:"hooks"`
	}
	data, err := readProjectFile(p.Dir, claudecode.SettingsPath)
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		return doctorCheck{name: "project hook", failed: true, detail: claudecode.SettingsPath + ": " + err.Error(), fix: "run toolhost init"}
	}
	for _, m := range s.Hooks["PreToolUse"] {
		for _, h := range m.Hooks {
			if strings.Contains(h.Command, " hook pretooluse ") && !strings.Contains(h.Command, " --agent ") {
				return checkHook(ctx, p, "project hook", h, "")
			}
		}
	}
	return doctorCheck{name: "project hook", failed: true, detail: claudecode.SettingsPath + " has no toolhost project hook: in a folder the CLI does not trust, nothing checks the agents' Bash and writes", fix: "run toolhost init"}
}

// lastLines returns the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
