package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/agents"
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
	cmd.AddCommand(list)
	return cmd
}
