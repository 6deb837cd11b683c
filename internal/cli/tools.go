package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/server"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/all"
)

func newToolsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "tools", Short: "List tools and print their schemas"}
	cmd.AddCommand(newToolsListCmd(g), newToolsSchemaCmd(), newToolsExportCmd(g))
	return cmd
}

// agentTools returns the tools of reg agent ag is offered under f, as
// serve's tools/list would list them (all of them when ag is nil), and the
// ones its toolPolicy names that f hides (policy.File.Offered).
func agentTools(reg *registry.Registry, ag *agents.Agent, f *policy.File) ([]*tool.Spec, []policy.Hidden) {
	if ag == nil {
		return reg.Specs(), nil
	}
	return f.Offered(ag, reg.Specs())
}

// writeToolsList prints specs as a tools/list result: {"tools": [...]}.
func writeToolsList(w io.Writer, specs []*tool.Spec) error {
	list := make([]server.ToolEntry, len(specs))
	for i, s := range specs {
		list[i] = server.ToolEntryOf(s)
	}
	return writeJSON(w, map[string]any{"tools": list})
}

func loadAgent(file, name string) (*agents.Agent, error) {
	if name == "" {
		return nil, nil
	}
	set, err := agents.Load(file)
	if err != nil {
		return nil, usageErr(err)
	}
	ag, err := set.Find(name)
	if err != nil {
		return nil, usageErr(err)
	}
	return ag, nil
}

func newToolsListCmd(g *globals) *cobra.Command {
	var agentName, agentsFile, policyFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in tools (for one agent with --agent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ag, err := loadAgent(agentsFile, agentName)
			if err != nil {
				return err
			}
			pol := policy.LoadWith(policyFile, g.logger(), ruleOptions("")).Current()
			entries, hidden := agentTools(all.Registry(), ag, pol)
			if asJSON {
				return writeToolsList(cmd.OutOrStdout(), entries)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tPERMISSION\tTIMEOUT\tCONFIRM\tDESCRIPTION")
			for _, s := range entries {
				d := pol.Decide(s)
				desc := oneLine(s.Description, 70)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", s.Name, d.Permission, d.Timeout, d.Confirm, desc)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(hidden) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "\nnamed by %s's toolPolicy but not offered:\n", ag.Name)
			}
			for _, h := range hidden {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s: %s\n", h.Name, h.Reason)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&agentName, "agent", "", "only the tools this agent sees (its toolPolicy and the policy file)")
	cmd.Flags().StringVar(&agentsFile, "agents", "", "agents file (default: embedded)")
	cmd.Flags().StringVar(&policyFile, "policy", "", "policy file (default: embedded)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print tools/list entries as JSON")
	return cmd
}

func newToolsSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema NAME",
		Short: "Print a tool's input and output JSON Schemas",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, ok := all.Registry().Lookup(args[0])
			if !ok {
				return usageErr(fmt.Errorf("unknown tool %q; see toolhost tools list", args[0]))
			}
			return writeJSON(cmd.OutOrStdout(), map[string]any{
				"name": e.Spec.Name, "inputSchema": e.Spec.InputSchema, "outputSchema": e.Spec.OutputSchema,
			})
		},
	}
}

// anthropicTool is one entry of the Anthropic Messages API "tools" list.
type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func newToolsExportCmd(g *globals) *cobra.Command {
	var agentName, agentsFile, policyFile, format string
	cmd := &cobra.Command{
		Use:   "export --agent X [--format mcp|anthropic]",
		Short: "Print the definitions of the tools an agent sees, as MCP tools/list entries or Anthropic API tools",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if agentName == "" {
				return usageErr(fmt.Errorf("--agent is required"))
			}
			ag, err := loadAgent(agentsFile, agentName)
			if err != nil {
				return err
			}
			entries, _ := agentTools(all.Registry(), ag, policy.LoadWith(policyFile, g.logger(), ruleOptions("")).Current())
			switch format {
			case "mcp":
				return writeToolsList(cmd.OutOrStdout(), entries)
			case "anthropic":
				list := make([]anthropicTool, len(entries))
				for i, s := range entries {
					list[i] = anthropicTool{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema}
				}
				return writeJSON(cmd.OutOrStdout(), list)
			}
			return usageErr(fmt.Errorf("--format must be mcp or anthropic, not %q", format))
		},
	}
	cmd.Flags().StringVar(&agentName, "agent", "", "agent whose tools to print (its toolPolicy and the policy file select them)")
	cmd.Flags().StringVar(&agentsFile, "agents", "", "agents file (default: embedded)")
	cmd.Flags().StringVar(&policyFile, "policy", "", "policy file (default: embedded)")
	cmd.Flags().StringVar(&format, "format", "mcp", "mcp or anthropic")
	return cmd
}
