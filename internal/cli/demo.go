package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/demo"
)

func newDemoCmd(g *globals) *cobra.Command {
	var o demo.Options
	var withDashboard bool
	var df dashboardFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a scripted devloop across all six agents, each a real toolhost serve over stdio",
		Long: "demo plays a whole devloop without a model: the PM writes the PRD site, the Architect the SDD and a\n" +
			"contract, the Coder bridges the contract and writes the unit, the Tester parses a Vitest report and opens\n" +
			"bugs, the Integrator starts the unit and runs an HTTP case against it, the Bug Triager classifies the bug\n" +
			"found. Each agent is a `toolhost serve` subprocess driven over JSON-RPC on stdio, as an agent CLI would;\n" +
			"three calls are refused on purpose (sandbox, toolPolicy, Bash guard). It prints one line per step and a\n" +
			"summary, and exits non-zero naming the step that did not do what it should.\n" +
			"Without --project-dir the project is built in a temp dir, removed at the end unless --keep.\n" +
			"--dashboard serves `toolhost dashboard` on the project while the demo runs, opens it in the browser when\n" +
			"there is one, and keeps it, and the project, until Ctrl-C.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			o.Out = cmd.OutOrStdout()
			if f, ok := o.Out.(*os.File); ok {
				o.Progress = isatty.IsTerminal(f.Fd())
			}
			// The dashboard serves from the moment the project exists, so
			// the demo is watched as it runs, and until Ctrl-C after it.
			var served chan error
			if withDashboard {
				o.Keep = true
				o.Started = func(dir string) error {
					df.projectDir, df.agentsFile, df.open = dir, o.AgentsFile, true
					run, err := startDashboard(ctx, df, o.Out, g.logger())
					if err != nil {
						return err
					}
					served = make(chan error, 1)
					go func() { served <- run() }()
					return nil
				}
			}
			_, err := demo.Run(ctx, o)
			if errors.Is(err, demo.ErrProjectDir) {
				return usageErr(err)
			}
			if served == nil {
				return err
			}
			if err != nil {
				fmt.Fprintf(o.Out, "\n%v\n", err)
			}
			fmt.Fprintln(o.Out, "\nthe dashboard keeps running on the project; Ctrl-C stops it")
			if serr := <-served; serr != nil && err == nil {
				err = serr
			}
			return err
		},
	}
	cmd.Flags().StringVar(&o.ProjectDir, "project-dir", "", "build the project here (must be empty or absent; kept); default: a temp dir")
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the temp project dir to open the PRD site and read the audit")
	cmd.Flags().StringVar(&o.AgentsFile, "agents", "", "agents file for every session and hook (default: the embedded configs/agents.json)")
	cmd.Flags().BoolVar(&withDashboard, "dashboard", false, "serve the dashboard on the project while the demo runs, and keep it until Ctrl-C")
	df.register(cmd, "dashboard-addr", false)
	return cmd
}
