package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/bashguard"
)

func newGuardCmd(_ *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "guard [COMMAND]",
		Short: "Check a shell command with the Bash guard: exit 0 allow, exit 2 block with the reason on stderr",
		Long: "guard runs the inline-JSON Bash guard on COMMAND (or on standard input when no argument is given)\n" +
			"and exits 0 when the command may run, 2 when it is blocked (the reason and the allowed form on stderr).\n" +
			"Quote the command as one argument: toolhost guard 'curl -d @body.json http://x'.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var command string
			if len(args) == 1 {
				command = args[0]
			} else {
				// One byte over the limit is enough for the guard to refuse.
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), bashguard.MaxCommandLen+1))
				if err != nil {
					return err
				}
				command = string(b)
			}
			if err := bashguard.Check(command); err != nil {
				return &exitError{code: 2, err: err}
			}
			return nil
		},
	}
}
