package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/tools/all"
	"github.com/toolhost/toolhost/internal/upstream"
)

func newUpstreamCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "upstream", Short: "Inspect the upstream MCP servers of the tool policy"}
	var policyFile string
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Discover every upstream once and show its state, its tools and the last discovery error",
		Long: "list starts every upstream of the policy in parallel (each bounded by its discovery timeout), prints\n" +
			"what toolhost would serve from it (the name, whether the policy lets it through) and stops them again.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			pol := policy.LoadWith(policyFile, log, ruleOptions("")).Current()
			m := upstream.NewManager(upstream.Options{Log: log, Registry: all.Registry(), Version: Version, NoRetry: true})
			defer m.Close()
			m.Apply(pol)
			ctx, cancel := context.WithTimeout(cmd.Context(), upstream.MaxDiscoveryTimeout(pol)+time.Second)
			defer cancel()
			m.WaitReady(ctx)
			st := m.Status()
			if asJSON {
				type tool struct {
					upstream.ToolStatus
					Permission string `json:"permission"`
				}
				type entry struct {
					upstream.Status
					Tools []tool `json:"tools"`
				}
				out := make([]entry, len(st))
				for i, s := range st {
					out[i] = entry{Status: s, Tools: []tool{}}
					for _, t := range s.Tools {
						out[i].Tools = append(out[i].Tools, tool{ToolStatus: t, Permission: permission(pol, t.Name)})
					}
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{"upstreams": out})
			}
			w := cmd.OutOrStdout()
			if len(st) == 0 {
				_, err := fmt.Fprintln(w, "no upstream servers in the tool policy")
				return err
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, s := range st {
				fmt.Fprintf(tw, "%s\t%s %s\t%s\t%d tool(s)\n", s.Name, s.Transport, s.Target, s.State, len(s.Tools))
				if s.LastError != "" {
					fmt.Fprintf(tw, "  last error:\t%s\n", strings.ReplaceAll(s.LastError, "\n", " "))
				}
				for _, t := range s.Tools {
					note := permission(pol, t.Name)
					if !t.Served {
						note = "unavailable: " + t.Reason
					}
					fmt.Fprintf(tw, "  %s\t(%s)\t%s\n", t.Name, t.Upstream, note)
				}
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&policyFile, "policy", "", "tool policy file (default: the embedded configs/tools.json)")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	return cmd
}

// permission is what the policy says of a served upstream tool; an unlisted
// one is denied.
func permission(f *policy.File, name string) string {
	r, ok := f.Tools[name]
	if !ok {
		return "deny (not listed in the policy)"
	}
	switch r.Permission {
	case policy.Read, policy.Write:
		return r.Permission
	}
	return policy.Deny
}
