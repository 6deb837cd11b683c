package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/confine"
)

func newAgentsCmd(_ *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "agents", Short: "Show the agent templates"}
	var file string
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the agents with their tools and write allow-lists",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := agents.Load(file)
			if err != nil {
				return usageErr(err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), set)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tSHORT\tMODEL\tCLI TOOLS\tMCP TOOLS\tWRITES")
			for _, a := range set.List {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", a.Name, a.Short, a.CLI.Model,
					strings.Join(a.CLITools(), ","), len(a.MCPTools()), strings.Join(a.Sandbox.WriteAllowList, " "))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&file, "agents", "", "agents file (default: embedded)")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var docFile string
	doc := &cobra.Command{
		Use:   "doc",
		Short: "Print the markdown table of what each agent may do (the README's table is this output)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := agents.Load(docFile)
			if err != nil {
				return usageErr(err)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), AgentsMarkdown(set))
			return err
		},
	}
	doc.Flags().StringVar(&docFile, "agents", "", "agents file (default: embedded)")
	cmd.AddCommand(list, doc)
	return cmd
}

// AgentsMarkdown renders the agent templates as a markdown table.
func AgentsMarkdown(set *agents.Set) string {
	var b strings.Builder
	b.WriteString("| agent | model | CLI built-ins | toolhost tools | may write | its commands may write (Landlock) |\n|---|---|---|---|---|---|\n")
	code := func(list []string) string {
		if len(list) == 0 {
			return "—"
		}
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = "`" + s + "`"
		}
		return strings.Join(out, ", ")
	}
	for _, a := range set.List {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", a.Name, a.CLI.Model, code(a.CLITools()), code(a.MCPTools()),
			code(a.Sandbox.WriteAllowList), commandWrites(a))
	}
	return b.String()
}

// commandWrites says where the agent's commands may write: what each
// allow-list pattern grants under Landlock, the private $TMPDIR, and the
// network rules when they restrict anything.
func commandWrites(a *agents.Agent) string {
	if !a.Allows("Bash") && !a.Allows("bash") && !a.Allows("spawn_units") {
		return "— (starts no commands)"
	}
	if a.Sandbox.Commands == agents.CommandsOff {
		return "anything (sandbox.commands is off)"
	}
	var grants, none []string
	for _, p := range a.Sandbox.WriteAllowList {
		if g := confine.Describe(p); strings.HasPrefix(g, "nothing") {
			none = append(none, "`"+p+"`")
		} else {
			grants = append(grants, g)
		}
	}
	out := strings.Join(append(grants, "`$TMPDIR`"), ", ")
	if len(none) > 0 {
		out += "; not " + strings.Join(none, ", ") + " (toolhost's tools write those)"
	}
	n := a.Sandbox.Network
	if !n.Connect.Any || !n.Bind.Any {
		out += fmt.Sprintf("; TCP connect %s, bind %s", n.Connect, n.Bind)
	}
	if a.Allows("spawn_units") {
		out += fmt.Sprintf("; its units the same, binding %s", unitBindWords(n.UnitBind))
	}
	if a.Sandbox.Commands != agents.CommandsRequire {
		out += "; sandbox.commands " + a.Sandbox.Commands
	}
	return out
}

func unitBindWords(p agents.Ports) string {
	if p.Own {
		return "only their own port"
	}
	return "port " + p.String()
}
