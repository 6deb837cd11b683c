package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/audit"
)

// auditFlags are shared by audit and audit stats.
type auditFlags struct {
	projectDir string
	filter     audit.Filter
	since      time.Duration
	asJSON     bool
	limit      int
}

func (f *auditFlags) register(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.projectDir, "project-dir", "", "project directory (env TOOLHOST_PROJECT_DIR; default: the current directory)")
	fl.StringVar(&f.filter.Tool, "tool", "", "only rows of this tool")
	fl.StringVar(&f.filter.Status, "status", "", "only rows with this status: ok, ok_false, rejected, timeout, cancelled, error, superseded")
	fl.StringVar(&f.filter.Agent, "agent", "", "only rows of this agent (pm or devloop-pm)")
	fl.DurationVar(&f.since, "since", 0, "only rows newer than this, e.g. 15m or 24h")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON lines instead of a table")
	fl.IntVar(&f.limit, "limit", 0, "only the last N matching rows (0: all)")
}

// rows reads the project's audit trail through the filter.
func (f *auditFlags) rows(stderr io.Writer) ([]*audit.Row, error) {
	if f.limit < 0 {
		return nil, usageErr(errors.New("--limit must not be negative"))
	}
	dir := f.projectDir
	if dir == "" {
		dir = os.Getenv("TOOLHOST_PROJECT_DIR")
	}
	if dir == "" {
		dir = "."
	}
	p := filepath.Join(dir, filepath.FromSlash(audit.Path))
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no audit trail at %s: no call was made in this project yet, or --project-dir is wrong", p)
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	flt := f.filter
	if f.since > 0 {
		flt.Since = time.Now().Add(-f.since)
	}
	rows, bad, err := audit.Read(fh, flt)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "toolhost: skipped %d lines of %s that are not audit rows\n", bad, p)
	}
	if f.limit > 0 && len(rows) > f.limit {
		rows = rows[len(rows)-f.limit:]
	}
	return rows, nil
}

func newAuditCmd() *cobra.Command {
	var f auditFlags
	cmd := &cobra.Command{
		Use:   "audit [--project-dir D] [--tool T] [--status S] [--agent A] [--since DUR] [--json] [--limit N]",
		Short: "List the audit trail of a project (.toolhost/audit.ndjson)",
		Long: "audit lists the rows of the project's audit trail, one per tool call, oldest first, filtered by\n" +
			"tool, status, agent and age. --json prints the rows as stored (JSON lines).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := f.rows(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if f.asJSON {
				for _, r := range rows {
					if err := writeJSONLine(w, r); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tAGENT\tTOOL\tSTATUS\tKIND\tRETRIES\tMS\tCALL_ID\tERROR")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%.1f\t%s\t%s\n", r.TS.UTC().Format("2006-01-02T15:04:05.000Z"),
					cell(r.Agent, maxCell), cell(r.Tool, maxCell), cell(r.Status, maxCell), cell(dash(r.ErrorKind), maxCell),
					r.RetryCount, r.DurationMS, cell(r.CallID, maxCell), oneLine(r.Error, 80))
			}
			return tw.Flush()
		},
	}
	f.register(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "stats",
		Short: "Per tool: call count, outcomes and p50/p99 duration",
		Long: "stats groups the matching rows by tool: COUNT calls, OK, OK_FALSE (expected failures), REJECTED\n" +
			"(policy, validation, sandbox, guard, confirmation), FAILED (timeout, cancelled, error) and the p50/p99\n" +
			"duration in milliseconds (nearest rank). Superseded confirmations are not calls and are left out.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := f.rows(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			stats := audit.Stats(rows)
			w := cmd.OutOrStdout()
			if f.asJSON {
				for _, s := range stats {
					if err := writeJSONLine(w, s); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tCOUNT\tOK\tOK_FALSE\tREJECTED\tFAILED\tP50_MS\tP99_MS")
			for _, s := range stats {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\n", cell(s.Tool, maxCell), s.Count, s.OK, s.OKFalse, s.Rejected, s.Failed, s.P50MS, s.P99MS)
			}
			return tw.Flush()
		},
	})
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a message on one line of a table: its lines joined with
// single spaces, rendered by cell.
func oneLine(s string, n int) string { return cell(strings.Join(strings.Fields(s), " "), n) }

// maxCell is the most runes a table cell shows of a field.
const maxCell = 64

// cell renders a field for a table: audit rows and confirmations hold what
// callers sent (a call id, a tool name, arguments), so control characters,
// bidi and other invisible format characters and invalid UTF-8 are escaped
// (\n, \t, \x1b, \u202e, \xff) and the cell is cut to n runes, so that no
// field can break the table, recolour the terminal or pass for another row.
func cell(s string, n int) string {
	var b strings.Builder
	count := 0
	for i, r := range s {
		if count == n-1 && utf8.RuneCountInString(s[i:]) > 1 {
			b.WriteString("…")
			break
		}
		count++
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeJSONLine writes v as one compact JSON line (audit rows, stats and
// policy changes share this format with the audit file itself).
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
