package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/demo"
)

func newDemoCmd() *cobra.Command {
	var o demo.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a scripted devloop across all six agents, each a real toolhost serve over stdio",
		Long: "demo plays a whole devloop without a model: the PM writes the PRD site, the Architect the SDD and a\n" +
			"contract, the Coder bridges the contract and writes the unit, the Tester parses a Vitest report and opens\n" +
			"bugs, the Integrator starts the unit and runs an HTTP case against it, the Bug Triager classifies the bug\n" +
			"found. Each agent is a `toolhost serve` subprocess driven over JSON-RPC on stdio, as an agent CLI would;\n" +
			"three calls are refused on purpose (sandbox, toolPolicy, Bash guard). It prints one line per step and a\n" +
			"summary, and exits non-zero naming the step that did not do what it should.\n" +
			"Without --project-dir the project is built in a temp dir, removed at the end unless --keep.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			o.Out = cmd.OutOrStdout()
			if f, ok := o.Out.(*os.File); ok {
				o.Progress = isatty.IsTerminal(f.Fd())
			}
			_, err := demo.Run(ctx, o)
			if errors.Is(err, demo.ErrProjectDir) {
				return usageErr(err)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&o.ProjectDir, "project-dir", "", "build the project here (must be empty or absent; kept); default: a temp dir")
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the temp project dir to open the PRD site and read the audit")
	cmd.Flags().StringVar(&o.AgentsFile, "agents", "", "agents file for every session and hook (default: the embedded configs/agents.json)")
	return cmd
}
