package cli

import (
	"bufio"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/audit"
)

func newAuditExportCmd(f *auditFlags) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export [--since AGE|TIME] [--format otlp|ndjson] [--tool T] [--status S] [--agent A]",
		Short: "Print audit rows for a SIEM: OTLP log records (JSON) or the stored NDJSON lines",
		Long: "export prints the matching rows of the trail and its rotated files, oldest first, streaming.\n" +
			"--format otlp (default) prints OpenTelemetry log records in the OTLP/JSON encoding, one\n" +
			"ExportLogsServiceRequest of up to 512 records per line (what the Collector's otlpjsonfile receiver\n" +
			"reads); --format ndjson prints the rows exactly as stored, hash-chain fields included. The chain's own\n" +
			"records are not exported.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "otlp" && format != "ndjson" {
				return usageErr(fmt.Errorf("--format must be otlp or ndjson, not %q", format))
			}
			if err := f.resolve(true); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if format == "ndjson" {
				bw := bufio.NewWriterSize(out, 64<<10)
				err := f.each(cmd.Context(), cmd.ErrOrStderr(), func(_ *audit.Row, line []byte) error {
					_, err := bw.Write(append(line, '\n'))
					return err
				})
				if err != nil {
					return err
				}
				return bw.Flush()
			}
			abs, err := filepath.Abs(f.projectDir)
			if err != nil {
				return err
			}
			ow := audit.NewOTLPWriter(out, Version, f.projectID, abs)
			if err := f.each(cmd.Context(), cmd.ErrOrStderr(), func(r *audit.Row, _ []byte) error { return ow.Add(r) }); err != nil {
				return err
			}
			return ow.Close()
		},
	}
	cmd.Flags().StringVar(&format, "format", "otlp", "otlp (OTLP/JSON log records) or ndjson (the rows as stored)")
	return cmd
}
