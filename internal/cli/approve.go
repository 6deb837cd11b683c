package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/store/filestore"
)

func newApproveCmd() *cobra.Command {
	var sf stateFlags
	var deny, list bool
	cmd := &cobra.Command{
		Use:   "approve CONFIRMATION_ID --project-dir D [--deny] | approve --list --project-dir D",
		Short: "Approve (or deny) a tool call that is waiting for human confirmation",
		Long: "A tool whose policy says confirm: true, called by a client without MCP elicitation, answers\n" +
			"needs_confirmation with a confirmation_id. approve records a human's decision on it; the agent's next\n" +
			"identical call (same session, tool and arguments) runs once (or is refused with --deny). Decide within\n" +
			"the confirmation's TTL (default 10 minutes); the approval then waits the same TTL for its call.\n" +
			"--list shows the confirmations of the project.",
		Args: func(cmd *cobra.Command, args []string) error {
			if list {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.resolve(false); err != nil {
				return err
			}
			st, err := sf.open(filestore.DecisionsOnly)
			if err != nil {
				return err
			}
			defer st.Close()
			ctx := cmd.Context()
			w := cmd.OutOrStdout()
			if list {
				entries, err := st.Confirmations().List(ctx)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tTOOL\tSESSION\tEXPIRES\tARGUMENTS")
				for _, e := range entries {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Status, e.Agent, e.Tool, e.SessionID,
						e.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"), oneLine(string(e.Arguments), 80))
				}
				return tw.Flush()
			}
			e, err := st.Confirmations().Decide(ctx, args[0], !deny)
			if err != nil {
				return err
			}
			effect := "may now run once"
			if deny {
				effect = "will be refused"
			}
			fmt.Fprintf(w, "%s %s: the next call of %s by agent %s (session %s) with the same arguments %s (until %s)\n",
				e.ID, e.Status, e.Tool, e.Agent, e.SessionID, effect, e.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"))
			return nil
		},
	}
	sf.register(cmd.Flags(), "")
	cmd.Flags().BoolVar(&deny, "deny", false, "deny the call instead of approving it")
	cmd.Flags().BoolVar(&list, "list", false, "list the project's confirmations instead of deciding one")
	return cmd
}
