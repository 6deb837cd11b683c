package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func newAuditVerifyCmd(f *auditFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "verify [--project-dir D] [--json]",
		Short: "Check the audit trail's hash chain: exit 0 when no row was edited, removed, reordered or inserted",
		Long: "verify walks the hash chain of .toolhost/audit.ndjson and its rotated files. Every line carries the\n" +
			"sha256 of the line before it and its number in the chain, and a checkpoint records the chain's end after\n" +
			"each fsync. verify exits 0 and says how many rows it verified, or exits 1 and names the first line that was\n" +
			"edited, removed, reordered or inserted, or the rows cut off the end. What a crash leaves (rows after the\n" +
			"last checkpoint, a torn write the next writer recorded, an interrupted rotation) is not a change; it is\n" +
			"named in a note. The chain's last hash is printed: kept outside the project, it proves later that nothing\n" +
			"up to it changed. The filter flags do not apply.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := f.trail()
			if err != nil {
				return err
			}
			defer st.Close()
			v, err := st.Audit().Verify(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if f.asJSON {
				if err := writeJSONLine(w, v); err != nil {
					return err
				}
			} else {
				if v.Problem == nil {
					fmt.Fprintf(w, "verified %d rows (%d lines of the chain) in %d files: no row was edited, removed, reordered or inserted\n", v.Rows, v.Lines, v.Files)
					if v.LastSeq > 0 {
						fmt.Fprintf(w, "chain %s ends at seq %d, sha256 %s\n", v.ChainID, v.LastSeq, v.LastSHA256)
					}
					if v.Unanchored > 0 {
						fmt.Fprintf(w, "note: the last %d lines come after the checkpoint (written within the last fsync interval, or before a crash): a cut among them would not be seen\n", v.Unanchored)
					}
				}
				for _, n := range v.Notes {
					fmt.Fprintf(w, "note: %s\n", n)
				}
			}
			if v.Problem != nil {
				return &exitError{code: 1, err: errors.New("audit trail changed: " + v.Problem.Kind + " at " + v.Problem.Error())}
			}
			return nil
		},
	}
}
