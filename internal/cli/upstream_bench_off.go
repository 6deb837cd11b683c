//go:build bench_no_upstream

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// newUpstreamCmd of a build with -tags bench_no_upstream
// (BenchmarkStartCost's A/B builds only) has no upstream client.
func newUpstreamCmd(*globals) *cobra.Command {
	return &cobra.Command{Use: "upstream", RunE: func(*cobra.Command, []string) error {
		return errors.New("built without upstream servers (-tags bench_no_upstream)")
	}}
}
