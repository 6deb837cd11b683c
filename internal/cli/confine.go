package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/confinecmd"
)

// newConfineCmd is `toolhost confine`, whose one owner is
// internal/confinecmd (also linked, alone, into cmd/toolhost-confine).
func newConfineCmd(_ *globals) *cobra.Command {
	var o confinecmd.Options
	cmd := &cobra.Command{
		Use:   "confine --agent X --project-dir D [--unit U --port P] [--hold] -- CMD ARGS…",
		Short: "Run CMD confined by the kernel (Landlock) to what the agent may write",
		Long: "confine starts CMD confined exactly as the bash tool and spawn_units confine theirs (the same ruleset,\n" +
			"no capabilities, its own session without a controlling terminal, only stdin, stdout and stderr, the\n" +
			"agent's filtered environment) and waits for it: stdin, stdout, stderr, the exit status (or the signal) and\n" +
			"the working directory are CMD's own, and the signals confine gets are passed on to CMD's process group.\n" +
			"CMD may write only the agent's write roots, a private $TMPDIR\n" +
			"and /dev/null-like devices; reads stay open unless the agent sets sandbox.readAllowList.\n" +
			"--unit (with --port) confines a unit: it may bind only that port unless the agent's network.unitBind says\n" +
			"otherwise. --explain prints the ruleset as JSON instead of running CMD. When the kernel cannot confine and\n" +
			"the agent's sandbox.commands is require, CMD is not run and confine exits 126 with the reason.\n" +
			"--hold (the hook's rewrite of the CLI's Bash) also keeps the project's live registry told while any\n" +
			"process of CMD lives. toolhost-confine, installed beside toolhost, is this command alone in a small binary.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if code := confinecmd.Main([]string{self, "confine"}, o, args); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	// The command's own flags are its own: flag parsing stops at CMD.
	fl.SetInterspersed(false)
	fl.AddGoFlagSet(o.FlagSet("confine"))
	_ = fl.MarkHidden(confinecmd.HolderFlag)
	return cmd
}
