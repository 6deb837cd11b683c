package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/claudecode"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/tools/all"
)

// claudeConfig is what `toolhost mcp-config` derives for one agent.
type claudeConfig struct {
	bin        string
	agent      *agents.Agent
	projectDir string
	unit       string
	session    string
	// httpURL, when set, is a running `serve --http` the CLI connects to
	// instead of launching serve on stdio.
	httpURL    string
	agentsFile string
	policyFile string
	// otel are the OTEL_* variables set where the configuration is made:
	// the server the CLI launches exports its telemetry the same way.
	otel map[string]string
}

// otelEnv returns the OTEL_* variables of environ.
func otelEnv(environ []string) map[string]string {
	m := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "OTEL_") && v != "" {
			m[k] = v
		}
	}
	return m
}

func (c *claudeConfig) serveArgs() []string {
	args := []string{"serve", "--agent", c.agent.Name, "--project-dir", c.projectDir}
	if c.unit != "" {
		args = append(args, "--unit", c.unit)
	}
	if c.session != "" {
		args = append(args, "--session", c.session)
	}
	if c.agentsFile != "" {
		args = append(args, "--agents", c.agentsFile)
	}
	if c.policyFile != "" {
		args = append(args, "--policy", c.policyFile)
	}
	return args
}

// MCPConfig is the JSON Claude CLI's --mcp-config takes: a stdio server
// the CLI launches, or with httpURL the running `serve --http` at that URL,
// whose bearer token the CLI gets from a headersHelper — a command the CLI
// runs in its own process, never confined, that reads the token from
// toolhost's secrets directory — so the token is in no file the agent's
// commands can read and in no command line.
func (c *claudeConfig) MCPConfig() map[string]any {
	if c.httpURL != "" {
		helper := []string{c.bin, "mcp-config", "--agent", c.agent.Name, "--project-dir", c.projectDir, "--http-headers"}
		return map[string]any{"mcpServers": map[string]any{
			"toolhost": map[string]any{
				"type":          "http",
				"url":           c.httpURL,
				"headersHelper": claudecode.ShellJoin(helper),
			},
		}}
	}
	env := map[string]string{"TOOLHOST_LOG_LEVEL": "info"}
	for k, v := range c.otel {
		env[k] = v
	}
	return map[string]any{"mcpServers": map[string]any{
		"toolhost": map[string]any{
			"type":    "stdio",
			"command": c.bin,
			"args":    c.serveArgs(),
			"env":     env,
		},
	}}
}

// AllowedTools is the --allowedTools list: every MCP tool of the agent's
// toolPolicy that serve would offer it under the policy (policy.File.Access)
// as mcp__toolhost__<tool>, plus the CLI built-ins it names. An entry that
// names no built-in tool (an upstream tool or a glob) stays: the tool exists
// only once serve discovers it, and serve asks Access then.
func (c *claudeConfig) AllowedTools(reg *registry.Registry, f *policy.File) []string {
	var out []string
	for _, t := range c.agent.MCPTools() {
		if e, ok := reg.Lookup(t); ok && !f.Access(c.agent, e.Spec).Visible() {
			continue
		}
		out = append(out, "mcp__toolhost__"+t)
	}
	return append(out, c.agent.CLITools()...)
}

// hookedTools are the Claude CLI built-ins the hook always checks: the
// guard reads Bash, the sandbox the writes.
var hookedTools = []string{"Bash", "Write", "Edit", "MultiEdit", "NotebookEdit"}

// Settings is the .claude/settings.json fragment installing the
// PreToolUse hook for this agent: for the tools the hook always checks,
// and every other CLI built-in a rule of the policy can apply to (Read,
// WebFetch …), so the CLI asks the hook about them too.
func (c *claudeConfig) Settings() map[string]any {
	args := append([]string{c.bin, "hook", "pretooluse", "--agent", c.agent.Name, "--project-dir", c.projectDir}, c.extraConfigArgs()...)
	if c.policyFile != "" {
		args = append(args, "--policy", c.policyFile)
	}
	if c.unit != "" {
		args = append(args, "--unit", c.unit)
	}
	f, _ := c.policy()
	return map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{map[string]any{
			"matcher": hookMatcher(f),
			"hooks":   []any{map[string]any{"type": "command", "command": claudecode.ShellJoin(args), "timeout": claudecode.HookTimeout}},
		}},
	}}
}

// hookMatcher is the PreToolUse matcher of toolhost's hook: the tools the
// hook always checks, and every other CLI built-in a rule of the policy f
// can apply to (Read, WebFetch …), so the CLI asks the hook about them too
// (f nil: the policy could not be read, and only the former).
func hookMatcher(f *policy.File) string {
	matched := slices.Clone(hookedTools)
	if f != nil {
		for _, t := range rules.ClaudeTools {
			if !slices.Contains(matched, t.Name) && f.RuleSet().For(t.Name) != nil {
				matched = append(matched, t.Name)
			}
		}
	}
	return strings.Join(matched, "|")
}

// policy is the policy file the hook will read (the embedded default
// without --policy).
func (c *claudeConfig) policy() (*policy.File, error) {
	if c.policyFile == "" {
		return policy.ParseWith(configs.ToolsJSON, ruleOptions(c.projectDir))
	}
	return readPolicy(c.policyFile, c.projectDir)
}

func (c *claudeConfig) extraConfigArgs() []string {
	var out []string
	if c.agentsFile != "" {
		out = append(out, "--agents", c.agentsFile)
	}
	return out
}

// ClaudeArgs is the full argument vector for one agent session.
func (c *claudeConfig) ClaudeArgs(allowed []string) ([]string, error) {
	mcp, err := json.Marshal(c.MCPConfig())
	if err != nil {
		return nil, err
	}
	settings, err := json.Marshal(c.Settings())
	if err != nil {
		return nil, err
	}
	// --tools names the built-in tools the CLI offers at all (exactly the
	// agent's); a deny list would let every built-in a newer CLI adds
	// through. MCP tools are not built-ins: --tools leaves them alone, and
	// --allowedTools approves the agent's.
	return []string{"claude",
		"--model", c.agent.CLI.Model,
		"--mcp-config", string(mcp),
		"--strict-mcp-config",
		"--tools", strings.Join(c.agent.CLITools(), ","),
		"--allowedTools", strings.Join(allowed, ","),
		"--settings", string(settings),
	}, nil
}

func newMCPConfigCmd(g *globals) *cobra.Command {
	var c claudeConfig
	var agentName string
	var allowed, settings, claudeArgs, shell, httpHeaders bool
	cmd := &cobra.Command{
		Use:   "mcp-config --agent X --project-dir D",
		Short: "Print the Claude CLI --mcp-config JSON (or --allowed-tools, --settings, --claude-args) for an agent",
		Example: "  toolhost mcp-config --agent devloop-coder --project-dir ./proj > mcp.json\n" +
			"  claude --mcp-config mcp.json --allowedTools \"$(toolhost mcp-config --agent devloop-coder --project-dir ./proj --allowed-tools)\"",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := agents.Load(c.agentsFile)
			if err != nil {
				return usageErr(err)
			}
			if c.agent, err = set.Find(agentName); err != nil {
				return usageErr(err)
			}
			if c.projectDir == "" {
				return usageErr(fmt.Errorf("--project-dir is required"))
			}
			if c.projectDir, err = filepath.Abs(c.projectDir); err != nil {
				return err
			}
			for _, p := range []*string{&c.agentsFile, &c.policyFile} {
				if *p != "" {
					if *p, err = filepath.Abs(*p); err != nil {
						return err
					}
				}
			}
			if c.bin, err = os.Executable(); err != nil {
				return err
			}
			if resolved, err := filepath.EvalSymlinks(c.bin); err == nil {
				c.bin = resolved
			}
			c.otel = otelEnv(os.Environ())
			w := cmd.OutOrStdout()
			if httpHeaders {
				// The headersHelper: the header this agent's serve --http
				// requires, for the CLI that runs this.
				token, _, err := httpToken(c.agent.Name, c.projectDir)
				if err != nil {
					return err
				}
				return writeJSON(w, map[string]string{"Authorization": "Bearer " + token})
			}
			if c.httpURL != "" {
				if u, err := url.Parse(c.httpURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usageErr(fmt.Errorf("--http %q: want the URL serve --http logged, e.g. http://127.0.0.1:8765/mcp", c.httpURL))
				}
			}
			allowedTools := func() []string {
				return c.AllowedTools(all.Registry(), policy.LoadWith(c.policyFile, g.logger(), ruleOptions(c.projectDir)).Current())
			}
			switch {
			case allowed:
				_, err = fmt.Fprintln(w, strings.Join(allowedTools(), ","))
				return err
			case settings:
				return writeJSON(w, c.Settings())
			case claudeArgs:
				args, err := c.ClaudeArgs(allowedTools())
				if err != nil {
					return err
				}
				if shell {
					_, err = fmt.Fprintln(w, claudecode.ShellJoin(args))
					return err
				}
				return writeJSON(w, args)
			}
			return writeJSON(w, c.MCPConfig())
		},
	}
	f := cmd.Flags()
	f.StringVar(&agentName, "agent", "", "agent (devloop-coder or coder …)")
	f.StringVar(&c.projectDir, "project-dir", "", "project directory")
	f.StringVar(&c.unit, "unit", "", "unit id")
	f.StringVar(&c.session, "session", "", "session id")
	f.StringVar(&c.httpURL, "http", "", "connect the CLI to this running `serve --http` (its URL) instead of launching serve; the bearer token comes from a headersHelper")
	f.BoolVar(&httpHeaders, "http-headers", false, "print the Authorization header this agent's serve --http requires, as JSON (what the headersHelper runs)")
	f.StringVar(&c.agentsFile, "agents", "", "agents file (default: embedded)")
	f.StringVar(&c.policyFile, "policy", "", "policy file (default: embedded)")
	f.BoolVar(&allowed, "allowed-tools", false, "print the --allowedTools list instead")
	f.BoolVar(&settings, "settings", false, "print the .claude/settings.json fragment installing the PreToolUse hook")
	f.BoolVar(&claudeArgs, "claude-args", false, "print the whole claude argument vector (JSON array)")
	f.BoolVar(&shell, "shell", false, "with --claude-args: print a shell-quoted command line")
	return cmd
}
