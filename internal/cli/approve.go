package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/visible"
)

func newApproveCmd() *cobra.Command {
	var sf stateFlags
	var deny, list bool
	var show string
	cmd := &cobra.Command{
		Use:   "approve CONFIRMATION_ID --project-dir D [--deny] | approve --list --project-dir D | approve --show CONFIRMATION_ID --project-dir D",
		Short: "Approve (or deny) a tool call that is waiting for human confirmation",
		Long: "A tool whose policy says confirm: true, called by a client without MCP elicitation, answers\n" +
			"needs_confirmation with a confirmation_id. approve records a human's decision on it; the agent's next\n" +
			"identical call (same agent, session, tool and arguments) runs once (or is refused with --deny). Decide within\n" +
			"the confirmation's TTL (default 10 minutes); the approval then waits the same TTL for its call.\n" +
			"--list shows the confirmations of the project, one line each; --show ID prints one whole: the exact\n" +
			"arguments the call will run with (what a human decides on). Characters that would not show or would\n" +
			"change how the text reads (control, bidirectional and other format characters) are printed as escapes.",
		Args: func(cmd *cobra.Command, args []string) error {
			if list || show != "" {
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
			if show != "" {
				entries, err := st.Confirmations().List(ctx)
				if err != nil {
					return err
				}
				return showConfirmation(w, entries, show)
			}
			if list {
				entries, err := st.Confirmations().List(ctx)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tTOOL\tSESSION\tEXPIRES\tARGUMENTS")
				for _, e := range entries {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(e.ID, maxCell), cell(e.Status, maxCell), cell(e.Agent, maxCell),
						cell(e.Tool, maxCell), cell(e.SessionID, maxCell), e.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"), oneLine(string(e.Arguments), 80))
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
				visible.Line(e.ID), e.Status, visible.Line(e.Tool), visible.Line(e.Agent), visible.Line(e.SessionID), effect,
				e.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"))
			return nil
		},
	}
	sf.register(cmd.Flags(), "")
	cmd.Flags().BoolVar(&deny, "deny", false, "deny the call instead of approving it")
	cmd.Flags().BoolVar(&list, "list", false, "list the project's confirmations instead of deciding one")
	cmd.Flags().StringVar(&show, "show", "", "print one confirmation whole, with the exact arguments, instead of deciding one")
	return cmd
}

// showConfirmation prints confirmation id whole: who asks, for which tool,
// and the arguments as they will run, pretty-printed and never cut.
func showConfirmation(w io.Writer, entries []*confirm.Entry, id string) error {
	for _, e := range entries {
		if e.ID != id {
			continue
		}
		args, err := json.MarshalIndent(e.Arguments, "", "  ")
		if err != nil {
			args = e.Arguments
		}
		fmt.Fprintf(w, "confirmation %s (%s)\nagent:   %s\nsession: %s\ntool:    %s\nasked:   %s\nexpires: %s\narguments:\n%s\n",
			visible.Line(e.ID), e.Status, visible.Line(e.Agent), visible.Line(e.SessionID), visible.Line(e.Tool),
			e.CreatedAt.Format(time.RFC3339), e.ExpiresAt.Format(time.RFC3339), visible.Text(string(args)))
		return nil
	}
	return fmt.Errorf("%w: no confirmation %s; toolhost approve --list shows them", confirm.ErrNotFound, id)
}
