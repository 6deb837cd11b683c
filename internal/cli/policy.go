package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/progid"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/session"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/all"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Work with tool policy files (configs/tools.json)"}
	cmd.AddCommand(newPolicyCheckCmd(), newPolicyExplainCmd())
	return cmd
}

func newPolicyCheckCmd() *cobra.Command {
	var against string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check FILE [--against CURRENT]",
		Short: "Validate a policy file and print what it would change",
		Long: "check parses FILE exactly as a running toolhost would on reload — its rules compiled and type-checked\n" +
			"against the tools' schemas — and prints what it changes versus the current policy (the embedded default,\n" +
			"or --against FILE): tools added or removed, permission, timeout, retry and confirm changes, rules added,\n" +
			"removed, changed or reordered, upstream servers, settings, and warnings (unknown permissions are denied,\n" +
			"retries on write tools are ignored, a rule naming a tool that is no built-in). Exit 2 when FILE is\n" +
			"invalid, with every rule that does not compile (its id, its position in the list, where in its when\n" +
			"expression, and the error); a running toolhost would keep its last good policy and log\n" +
			"tool_policy_invalid with the same reason.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			next, err := readPolicy(args[0], "")
			if err != nil {
				var ce *rules.CompileError
				if asJSON && errors.As(err, &ce) {
					for _, p := range ce.Problems {
						if err := writeJSONLine(w, p); err != nil {
							return err
						}
					}
				}
				return usageErr(invalidPolicy(args[0], err))
			}
			cur, err := policy.ParseWith(configs.ToolsJSON, ruleOptions(""))
			curName := "the embedded default policy"
			if against != "" {
				cur, err = readPolicy(against, "")
				curName = against
			}
			if err != nil {
				return usageErr(fmt.Errorf("current policy: %w", err))
			}
			changes := policy.Diff(cur, next)
			if asJSON {
				for _, c := range changes {
					if err := writeJSONLine(w, c); err != nil {
						return err
					}
				}
				return nil
			}
			fmt.Fprintf(w, "%s is valid: %d tools, %d rules, %d upstream servers\n", args[0], len(next.Tools), len(next.Rules), len(next.Upstream))
			if len(changes) == 0 {
				fmt.Fprintf(w, "no changes versus %s\n", curName)
				return nil
			}
			fmt.Fprintf(w, "changes versus %s:\n", curName)
			for _, c := range changes {
				fmt.Fprintln(w, "  "+c.String())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&against, "against", "", "the policy in force to compare with (default: the embedded configs/tools.json)")
	cmd.Flags().StringVar(&against, "policy", "", "alias of --against, matching serve's --policy")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the changes (or the rules that do not compile) as JSON lines")
	return cmd
}

// invalidPolicy is the message of a policy that does not parse: one line
// per rule that does not compile.
func invalidPolicy(name string, err error) error {
	var ce *rules.CompileError
	if !errors.As(err, &ce) {
		return err
	}
	n := fmt.Sprintf("%d rule problems", len(ce.Problems))
	if len(ce.Problems) == 1 {
		n = "1 rule problem"
	}
	lines := []string{fmt.Sprintf("%s is invalid: %s", name, n)}
	for _, p := range ce.Problems {
		lines = append(lines, "  "+p.String())
	}
	return errors.New(strings.Join(lines, "\n"))
}

// readPolicy parses a policy file with its rules compiled as serve
// compiles them for project dir dir.
func readPolicy(path, dir string) (*policy.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := policy.ParseWith(data, ruleOptions(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// explanation is what `policy explain` says about one call.
type explanation struct {
	Tool  string `json:"tool"`
	Agent string `json:"agent"`
	// Door is toolhost (a toolhost tool, decided by serve's engine) or
	// claude (a Claude CLI built-in, decided by the hook).
	Door string `json:"door"`
	// Refused is set when the call would be refused before the rules run
	// (the agent may not call the tool, the arguments are invalid).
	Refused string          `json:"refused,omitempty"`
	Steps   []rules.Step    `json:"steps,omitempty"`
	Verdict *rules.Verdict  `json:"verdict,omitempty"`
	Cmd     json.RawMessage `json:"cmd,omitempty"`
	// Guard is the Bash guard's refusal of a command the call would run.
	Guard string `json:"guard,omitempty"`
	// Decision says, in a sentence, what happens to the call.
	Decision string `json:"decision"`
}

func newPolicyExplainCmd() *cobra.Command {
	var policyFile, agentsFile, toolName, argsJSON, agentName, projectDir, unit, pid string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain --tool T --args JSON --agent A [--policy F]",
		Short: "Say which policy rule decides a call, and why, without running anything",
		Long: "explain takes a call as serve (a toolhost tool) or the hook (a Claude CLI built-in such as Bash or\n" +
			"Write) would receive it and says what the policy does with it: whether the agent may call the tool,\n" +
			"whether the arguments are valid, each rule that can apply with what its condition gave (true, false,\n" +
			"unknown — it depends on what the shell parser cannot know of a command — or an error), the rule that\n" +
			"decides, the cmd facts of a command, and whether the Bash guard would refuse the command. Nothing is\n" +
			"run and nothing is written.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if toolName == "" || agentName == "" {
				return usageErr(errors.New("--tool and --agent are required"))
			}
			dir := projectDir
			if dir == "" {
				dir = os.Getenv("TOOLHOST_PROJECT_DIR")
			}
			if dir != "" {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return usageErr(err)
				}
				dir = abs
			}
			var pf *policy.File
			var err error
			if policyFile == "" {
				pf, err = policy.ParseWith(configs.ToolsJSON, ruleOptions(dir))
			} else {
				pf, err = readPolicy(policyFile, dir)
			}
			if err != nil {
				return usageErr(invalidPolicy(policyFile, err))
			}
			set, err := agents.Load(agentsFile)
			if err != nil {
				return usageErr(err)
			}
			ag, err := set.Find(agentName)
			if err != nil {
				return usageErr(err)
			}
			if argsJSON == "" {
				argsJSON = "{}"
			}
			if !json.Valid([]byte(argsJSON)) {
				return usageErr(fmt.Errorf("--args is not valid JSON"))
			}
			if pid == "" {
				pid = os.Getenv("TOOLHOST_PID")
			}
			// Programs are identified as the agent's commands would find
			// them: from its working directory in the project (the
			// current directory when none is given).
			proj := dir
			if proj == "" {
				proj, _ = os.Getwd()
			}
			progs := progid.ForProject(set, proj, filepath.Join(proj, filepath.FromSlash(ag.Cwd("", pid, unit))), "")
			x := explain(pf, all.Registry(), ag, toolName, []byte(argsJSON), unit, pid, proj, progs)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), x)
			}
			printExplanation(cmd.OutOrStdout(), x)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&toolName, "tool", "", "the tool: a toolhost tool (bash, write_chapter …) or a Claude CLI built-in (Bash, Write …)")
	fl.StringVar(&argsJSON, "args", "{}", "the call's arguments (a toolhost tool) or tool_input (a Claude CLI built-in), as JSON")
	fl.StringVar(&agentName, "agent", "", "the agent: devloop-coder, coder …")
	fl.StringVar(&policyFile, "policy", "", "policy file (default: the embedded configs/tools.json)")
	fl.StringVar(&agentsFile, "agents", "", "agents file (default: the embedded configs/agents.json)")
	fl.StringVar(&projectDir, "project-dir", "", "project directory, for glob() on absolute paths (env TOOLHOST_PROJECT_DIR)")
	fl.StringVar(&unit, "unit", "", "the unit, for the rules' unit")
	fl.StringVar(&pid, "pid", "", "the project id, for the rules' project (env TOOLHOST_PID)")
	fl.BoolVar(&asJSON, "json", false, "print the explanation as JSON")
	return cmd
}

// explain follows the call through the stages serve's engine (or the hook)
// would take up to the rules, and evaluates them.
func explain(pf *policy.File, reg *registry.Registry, ag *agents.Agent, name string, raw []byte, unit, pid, projectDir string, progs bashguard.Programs) explanation {
	x := explanation{Tool: name, Agent: ag.Name, Door: "toolhost"}
	var commands func() []tool.Command
	entry, ok := reg.Lookup(name)
	switch {
	case ok:
		if a := pf.Access(ag, entry.Spec); !a.Visible() {
			x.Refused = a.Reason
			x.Decision = "refused before the rules run: " + a.Reason
			return x
		}
		err := checkArgs(entry, raw)
		if err != nil {
			x.Refused = "the arguments are not valid: " + err.Error()
			x.Decision = "refused before the rules run: " + x.Refused
			return x
		}
		if c := entry.Spec.Commands; c != nil {
			commands = func() []tool.Command { return c(raw) }
		}
	case slices.ContainsFunc(rules.ClaudeTools, func(t rules.Tool) bool { return t.Name == name }):
		x.Door = "claude"
		if name == "Bash" {
			var in struct {
				Command string `json:"command"`
			}
			_ = json.Unmarshal(raw, &in)
			commands = func() []tool.Command { return []tool.Command{{Script: in.Command}} }
		}
	default:
		x.Door = "upstream"
	}
	if commands != nil {
		cmds := commands()
		for i := range cmds {
			if d := cmds[i].Dir; d != "" && !filepath.IsAbs(d) && projectDir != "" {
				cmds[i].Dir = filepath.Join(projectDir, filepath.FromSlash(d))
			}
		}
		commands = func() []tool.Command { return cmds }
		x.Cmd = rules.FactsJSON(cmds, bashguard.Options{Programs: progs})
		for _, c := range cmds {
			o := bashguard.Options{Programs: progs, Dir: c.Dir}
			var err error
			if c.Argv != nil {
				err = bashguard.CheckArgvWith(c.Argv, c.Env, o)
			} else {
				err = bashguard.CheckWith(c.Script, o)
			}
			if err != nil {
				x.Guard = err.Error()
				break
			}
		}
	}
	tr := pf.RuleSet().For(name)
	if tr != nil {
		args, _ := wirejson.DecodeAny(raw)
		v, steps := tr.Explain(&rules.Input{Tool: name, Agent: ag.Name, Unit: unit, Project: pid, Now: time.Now(), Args: args, Commands: commands, Programs: progs})
		x.Steps = steps
		if v.Decided() {
			x.Verdict = &v
		}
	}
	x.Decision = decisionText(pf, entry, x)
	return x
}

func decisionText(pf *policy.File, entry *registry.Entry, x explanation) string {
	var v rules.Verdict
	if x.Verdict != nil {
		v = *x.Verdict
	}
	guard := ""
	if x.Guard != "" {
		guard = "; then the Bash guard refuses the command: " + x.Guard
	}
	switch v.Effect {
	case rules.Deny:
		return (&rules.Refusal{Tool: x.Tool, Verdict: v}).Error()
	case rules.Confirm:
		if x.Door == "claude" {
			return "the hook answers ask: the CLI asks its user — " + v.Ask() + guard
		}
		return "a human must confirm it: " + v.Ask() + guard
	case rules.Allow:
		if x.Door == "claude" {
			return fmt.Sprintf("rule %s allows it: the hook does not object, and the CLI's own permission check decides%s", v.Rule, guard)
		}
		return fmt.Sprintf("rule %s allows it without a human's confirmation%s", v.Rule, guard)
	}
	switch {
	case x.Door == "claude":
		return "no rule decides: the hook does not object, and the CLI's own permission check decides" + guard
	case x.Door == "upstream":
		return "no rule decides; " + x.Tool + " is no built-in tool: an upstream tool of that name is decided by its policy entry (unlisted upstream tools are denied)"
	case pf.Decide(entry.Spec).Confirm:
		return "no rule decides: the tool's policy entry says confirm, so a human must confirm it" + guard
	}
	return "no rule decides: it runs as the tool's policy entry says" + guard
}

func printExplanation(w io.Writer, x explanation) {
	fmt.Fprintf(w, "%s called by %s (%s)\n", x.Tool, x.Agent, map[string]string{
		"toolhost": "a toolhost tool, decided by serve", "claude": "a Claude CLI built-in, decided by the hook",
		"upstream": "not a built-in tool"}[x.Door])
	if x.Cmd != nil {
		fmt.Fprintf(w, "cmd: %s\n", x.Cmd)
	}
	if x.Refused == "" && x.Steps == nil {
		fmt.Fprintln(w, "no rule of the policy applies to this tool")
	}
	for _, s := range x.Steps {
		mark := " "
		if s.Decides {
			mark = "→"
		}
		line := fmt.Sprintf("%s rules[%d] %s: %s", mark, s.Index, s.ID, s.Result)
		if s.Detail != "" {
			line += " — " + s.Detail
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "decision: "+x.Decision)
}

// checkArgs validates a call's arguments against the tool's input schema the
// way the engine's validate stage does.
func checkArgs(entry *registry.Entry, raw []byte) error {
	sch, err := entry.Validator()
	if err != nil {
		return err
	}
	doc, err := wirejson.DecodeAny(raw)
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	return sch.Check(doc)
}

// ruleOptions are what the policy's rules are compiled against outside a
// session (`policy check`, `policy explain`, the hook): exactly what serve
// compiles them against.
func ruleOptions(projectDir string) rules.Options {
	return session.RuleOptions(all.Registry(), projectDir)
}
