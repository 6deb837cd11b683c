package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/confine"
)

func newSandboxCmd(_ *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "What the kernel can confine on this machine"}
	var asJSON bool
	probe := &cobra.Command{
		Use:   "probe",
		Short: "Print the Landlock ABI found, what it can enforce, and check it with a confined child",
		Long: "probe asks the kernel for its Landlock ABI (capped by " + confine.ABIEnv + " if set), lists what\n" +
			"toolhost can enforce on the commands agents start with it, and runs /bin/sh confined to a scratch\n" +
			"directory to check that a write beside it is refused. It exits 0 when confinement holds, 1 otherwise.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := confine.Probe()
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), r); err != nil {
					return err
				}
			} else {
				w := cmd.OutOrStdout()
				if r.ABI > 0 {
					fmt.Fprintf(w, "Landlock ABI %d", r.ABI)
				} else {
					fmt.Fprint(w, "Landlock: not available")
				}
				if r.KernelABI != r.ABI {
					fmt.Fprintf(w, " (the kernel offers %d)", r.KernelABI)
				}
				fmt.Fprintln(w)
				if r.Reason != "" {
					fmt.Fprintln(w, "  "+r.Reason)
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				for _, f := range r.Features {
					mark := "no "
					if f.Usable {
						mark = "yes"
					}
					needs := fmt.Sprintf("ABI %d", f.ABI)
					if f.ABI == 0 {
						needs = "seccomp"
					}
					fmt.Fprintf(tw, "  %s\t%s\t%s\n", mark, needs, f.Name)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(w, "live check: "+r.Check)
			}
			if !r.Enforced {
				return &exitError{code: 1, err: fmt.Errorf("commands cannot be confined on this machine: %s", r.Check)}
			}
			return nil
		},
	}
	probe.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(probe)
	return cmd
}
