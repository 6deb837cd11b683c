package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/hook"
)

func newHookCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "hook", Short: "Agent CLI hooks (Claude CLI)"}
	var f hook.Options
	var state stateFlags
	pre := &cobra.Command{
		Use:   "pretooluse [--agent X | --lead X] --project-dir D",
		Short: "Claude CLI PreToolUse hook: the policy's rules, the Bash guard for Bash, the sandbox check for Write/Edit/MultiEdit/NotebookEdit",
		Long: "pretooluse reads the PreToolUse hook JSON on stdin. It applies the policy file's rules (--policy, the\n" +
			"same file serve reads) to the CLI's tool: a deny rule denies with its reason, a confirm rule answers\n" +
			"permissionDecision \"ask\" so the CLI asks its user, an allow rule changes nothing (the CLI's own\n" +
			"permission check still decides). For Bash it runs the inline-JSON guard on\n" +
			"tool_input.command; for Write, Edit, MultiEdit and NotebookEdit it checks tool_input.file_path\n" +
			"(notebook_path) against the agent's write allow-list. To deny it prints a permissionDecision \"deny\"\n" +
			"with the reason on stdout and exits 0 (with --exit-code: exits 2 with the reason on stderr). An allowed\n" +
			"Bash command is rewritten (hookSpecificOutput.updatedInput) to run under `toolhost confine` for the agent,\n" +
			"so the kernel confines it to the agent's allow-list; no permissionDecision is given, so the CLI's own\n" +
			"permission mode and rules still decide whether it runs. Because the CLI would match its settings' Bash(…)\n" +
			"deny and ask rules against the rewritten command, the hook applies them to the command as written\n" +
			"(each simple command of it too): a deny rule denies, an ask rule asks. Other allowed calls get no output.\n" +
			"Input it cannot read is denied, and so is every call when --agent is unknown or --project-dir is\n" +
			"missing or no decision is reached within --timeout.\n" +
			"The agent is the payload's agent_type: with --agent (an agent's own hook) a call another devloop agent\n" +
			"makes is denied as a misconfiguration; without it (the project's hook) agent_type chooses the agent, and\n" +
			"the main thread is checked as --lead, or with none left to the CLI's own rules (no output). The rewritten\n" +
			"Bash command leaves the CLI's shell in the directory the command ended in.\n" +
			"Every decision is logged on stderr and audited in the project's trail with the CLI's session_id,\n" +
			"agent_id and tool_use_id (once per tool_use_id, when both hooks decide a call).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Agent == "" {
				f.Agent = os.Getenv("TOOLHOST_AGENT")
			}
			id := callctx.Identity{ProjectDir: state.projectDir, ProjectID: state.projectID}
			id.FromEnv(os.Getenv)
			f.ProjectDir, f.ProjectID, f.Store = id.ProjectDir, id.ProjectID, state.store
			if f.Unit == "" {
				f.Unit = os.Getenv("TOOLHOST_UNIT")
			}
			err := hook.PreToolUse(cmd.InOrStdin(), cmd.OutOrStdout(), f, g.logger())
			if d := (*hook.Denied)(nil); errors.As(err, &d) {
				return &exitError{code: 2, err: err}
			}
			return err
		},
	}
	fl := pre.Flags()
	fl.StringVar(&f.Agent, "agent", "", "the agent the hook is installed for: devloop-coder, coder … (env TOOLHOST_AGENT); a call the payload's agent_type says another devloop agent makes is denied. Without it the payload's agent_type chooses the agent")
	fl.StringVar(&f.Lead, "lead", "", "without --agent: the agent whose rules apply to a call no devloop agent makes (the main thread); unset, toolhost decides nothing about such calls")
	state.register(fl, "")
	fl.StringVar(&f.AgentsFile, "agents", "", "agents file (default: the embedded configs/agents.json)")
	fl.StringVar(&f.PolicyFile, "policy", "", "tool policy file whose rules apply (default: the embedded configs/tools.json)")
	fl.StringVar(&f.Unit, "unit", "", "the unit the agent works on, for the rules' unit (env TOOLHOST_UNIT)")
	fl.BoolVar(&f.ExitCode, "exit-code", false, "deny by exiting 2 with the reason on stderr instead of printing a JSON decision")
	fl.StringArrayVar(&f.ClaudeSettings, "claude-settings", nil, "a settings file the Claude CLI reads beyond the ones found (managed, $CLAUDE_CONFIG_DIR or ~/.claude, the project's .claude/): its Bash deny/ask rules are applied to the command as written (repeatable)")
	fl.DurationVar(&f.Timeout, "timeout", 5*time.Second, "deny when no decision is reached within this time (the agent CLI treats a hook that does not answer in its own timeout as allow)")
	cmd.AddCommand(pre, newHookCwdCmd())
	return cmd
}

// newHookCwdCmd is the step of a rewritten Bash command that moves the
// CLI's shell to where the confined command ended (internal/hook/cwd.go).
func newHookCwdCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "cwd FILE",
		Short:  "Print the directory a confined Bash command reported in FILE (when it is one), and remove FILE",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir := hook.TakeCwdReport(args[0]); dir != "" {
				_, err := fmt.Fprint(cmd.OutOrStdout(), dir)
				return err
			}
			return nil
		},
	}
}
