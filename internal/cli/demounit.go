package cli

import (
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/demo"
)

func newDemoUnitCmd() *cobra.Command {
	var port int
	cmd := &cobra.Command{
		Use:    "demo-unit",
		Short:  "Serve the demo's todo API (the unit under test the demo's Integrator starts)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return demo.RunUnit(port)
		},
	}
	cmd.Flags().IntVar(&port, "port", 0, "port on 127.0.0.1 (default: $PORT)")
	return cmd
}
