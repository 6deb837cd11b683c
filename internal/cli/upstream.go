//go:build !bench_no_upstream

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tools/all"
	"github.com/toolhost/toolhost/internal/upstream"
)

func newUpstreamCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "upstream", Short: "Inspect the upstream MCP servers of the tool policy and approve their tool definitions"}
	cmd.AddCommand(newUpstreamListCmd(g), newUpstreamApproveCmd())
	return cmd
}

// projectStores opens the project's shared stores (pins, audit) the way a
// session does; dir "" opens nothing.
func projectStores(dir string) (*sandbox.Sandbox, *audit.FileSink, error) {
	if dir == "" {
		return nil, nil, nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, nil, usageErr(fmt.Errorf("--project-dir %s is not a directory", dir))
	}
	door, err := sandbox.New(dir, "toolhost", journal.ServiceAllowList)
	if err != nil {
		return nil, nil, err
	}
	return door, audit.NewFileSink(door, audit.Options{}), nil
}

// auditWith stores rows as agent who; a row that cannot be stored is said
// on stderr (the pins are already written).
func auditWith(sink *audit.FileSink, who string, stderr io.Writer) func(*audit.Row) {
	return func(r *audit.Row) {
		if r.TS.IsZero() {
			r.TS = time.Now().UTC()
		}
		if r.CallID == "" {
			r.CallID = callctx.NewCallID()
		}
		r.Agent = who
		if err := sink.Write(r); err != nil {
			fmt.Fprintf(stderr, "toolhost: audit row for %s not stored: %v\n", r.Tool, err)
		}
	}
}

func newUpstreamListCmd(g *globals) *cobra.Command {
	var policyFile, projectDir string
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--policy FILE] [--project-dir D] [--json]",
		Short: "Discover every upstream once and show its state, its tools and the last discovery error",
		Long: "list starts every upstream of the policy in parallel (each bounded by its discovery timeout), prints\n" +
			"what toolhost would serve from it (the name, whether the policy lets it through) and stops them again.\n" +
			"With --project-dir (or TOOLHOST_PROJECT_DIR) the tools are checked against the project's pinned\n" +
			"definitions exactly as a session checks them: a server seen for the first time is pinned, a changed or\n" +
			"new tool is withheld and waits for `toolhost upstream approve` (and both are audited).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			projectDir = envIdentity(callctx.Identity{ProjectDir: projectDir}).ProjectDir
			door, sink, err := projectStores(projectDir)
			if err != nil {
				return err
			}
			log := g.logger()
			pol := policy.LoadWith(policyFile, log, ruleOptions("")).Current()
			o := upstream.Options{Log: log, Registry: all.Registry(), Version: Version, NoRetry: true}
			if door != nil {
				defer door.Close()
				defer sink.Close()
				o.Pins = &upstream.Pins{Door: door, ProjectDir: door.ProjectDir()}
				o.ProjectDir = door.ProjectDir()
				o.Audit = auditWith(sink, "cli", cmd.ErrOrStderr())
			}
			m := upstream.NewManager(o)
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
				return writeJSON(cmd.OutOrStdout(), map[string]any{"upstreams": out, "pins_checked": door != nil})
			}
			w := cmd.OutOrStdout()
			if len(st) == 0 {
				_, err := fmt.Fprintln(w, "no upstream servers in the tool policy")
				return err
			}
			if door == nil {
				fmt.Fprintln(w, "(not checked against pinned definitions: no --project-dir)")
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, s := range st {
				fmt.Fprintf(tw, "%s\t%s %s\t%s\t%d tool(s)\n", s.Name, s.Transport, s.Target, s.State, len(s.Tools))
				if s.LastError != "" {
					fmt.Fprintf(tw, "  last error:\t%s\n", strings.ReplaceAll(s.LastError, "\n", " "))
				}
				for _, t := range s.Tools {
					note := permission(pol, t.Name)
					switch {
					case t.Withheld != "":
						note = "withheld: " + t.Reason
					case !t.Served:
						note = "unavailable: " + t.Reason
					}
					fmt.Fprintf(tw, "  %s\t(%s)\t%s\n", t.Name, t.Upstream, note)
				}
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&policyFile, "policy", "", "tool policy file (default: the embedded configs/tools.json)")
	list.Flags().StringVar(&projectDir, "project-dir", "", "check the tools against this project's pins (env TOOLHOST_PROJECT_DIR)")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return list
}

func newUpstreamApproveCmd() *cobra.Command {
	var projectDir string
	var dry bool
	cmd := &cobra.Command{
		Use:   "approve SERVER[__TOOL] --project-dir D [--dry-run]",
		Short: "Review and pin the new definition of a withheld upstream tool (or of every withheld tool of a server)",
		Long: "A session withholds an upstream tool whose definition (name, title, description, input or output schema,\n" +
			"annotations) differs from the one pinned in the project (.toolhost/pins.json), or that a pinned server\n" +
			"offers for the first time. approve prints a diff of the pinned and the new definition and pins the new\n" +
			"one; running sessions serve the tool again within a second (clients get tools/list_changed). A server's\n" +
			"name approves all of its withheld tools. --dry-run prints the diff and pins nothing.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			projectDir = envIdentity(callctx.Identity{ProjectDir: projectDir}).ProjectDir
			if projectDir == "" {
				return usageErr(errors.New("--project-dir is required (or TOOLHOST_PROJECT_DIR)"))
			}
			door, sink, err := projectStores(projectDir)
			if err != nil {
				return err
			}
			defer door.Close()
			defer sink.Close()
			pins := &upstream.Pins{Door: door, ProjectDir: door.ProjectDir()}
			approved, err := pins.Approve(args[0], dry)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			record := auditWith(sink, "human", cmd.ErrOrStderr())
			for _, a := range approved {
				fmt.Fprint(w, a.Diff())
				if dry {
					fmt.Fprintf(w, "would pin %s %s (dry run: nothing pinned)\n\n", a.Served, a.New.Hash)
					continue
				}
				fmt.Fprintf(w, "pinned %s %s; running sessions serve it within a second\n\n", a.Served, a.New.Hash)
				note := &audit.PinNote{Action: audit.PinApproved, Hash: a.New.Hash, Change: a.Change}
				if a.Old != nil {
					note.Pinned = a.Old.Hash
				}
				record(&audit.Row{Tool: a.Served, Source: "mcp:" + a.Server, Status: audit.StatusPin,
					Error: fmt.Sprintf("definition of %s approved with toolhost upstream approve (%s)", a.Served, a.Change), Pin: note})
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&projectDir, "project-dir", "", "project directory (env TOOLHOST_PROJECT_DIR)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print the diff only; pin nothing")
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
