package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/visible"
)

// auditFlags are shared by audit and its subcommands.
type auditFlags struct {
	stateFlags
	filter audit.Filter
	since  sinceValue
	asJSON bool
	limit  int
}

func (f *auditFlags) register(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	f.stateFlags.register(fl, "; default: the current directory")
	fl.StringVar(&f.filter.Tool, "tool", "", "only rows of this tool")
	fl.StringVar(&f.filter.Status, "status", "", "only rows with this status: ok, ok_false, rejected, timeout, cancelled, error, superseded, pin")
	fl.StringVar(&f.filter.Agent, "agent", "", "only rows of this agent (pm or devloop-pm)")
	fl.StringVar(&f.filter.ClientSession, "client-session", "", "only rows of this agent CLI session (Claude Code's session_id): every agent's calls and hook decisions in it")
	fl.Var(&f.since, "since", "only rows newer than this: an age (15m, 24h, 7d) or a time (2026-12-01, 2026-12-01T10:00:00Z); older rotated files are not read")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON lines instead of a table")
	fl.IntVar(&f.limit, "limit", 0, "only the last N matching rows (0: all)")
}

// trail opens the project's store to read its audit trail.
func (f *auditFlags) trail() (store.Store, error) {
	if err := f.resolve(true); err != nil {
		var missing *missingDirError
		if errors.As(err, &missing) {
			// A project dir that is not there has no trail either: say so
			// in the reader's terms.
			return nil, &store.NoTrailError{Where: filepath.Join(f.projectDir, filepath.FromSlash(audit.Path))}
		}
		return nil, err
	}
	return f.open(filestore.ReadOnly)
}

func (f *auditFlags) filterNow() audit.Filter {
	flt := f.filter
	flt.Since = f.since.at(time.Now())
	return flt
}

// each streams the project's audit rows through the filter (the last
// --limit of them, kept in a ring), reporting skipped lines on stderr.
func (f *auditFlags) each(ctx context.Context, stderr io.Writer, fn func(r *audit.Row, line []byte) error) error {
	if f.limit < 0 {
		return usageErr(errors.New("--limit must not be negative"))
	}
	st, err := f.trail()
	if err != nil {
		return err
	}
	defer st.Close()
	var ring []ringRow
	next := 0
	visit := fn
	if f.limit > 0 {
		visit = func(r *audit.Row, line []byte) error {
			rr := ringRow{row: *r, line: slices.Clone(line)}
			if len(ring) < f.limit {
				ring = append(ring, rr)
			} else {
				ring[next] = rr
				next = (next + 1) % f.limit
			}
			return nil
		}
	}
	bad, err := st.Audit().EachLine(ctx, f.filterNow(), visit)
	if err != nil {
		if errors.Is(err, store.ErrNoTrail) {
			return err
		}
		return fmt.Errorf("read the audit trail (%s): %w", st.Describe(), err)
	}
	reportBad(stderr, bad)
	for i := range ring {
		rr := &ring[(next+i)%len(ring)]
		if err := fn(&rr.row, rr.line); err != nil {
			return err
		}
	}
	return nil
}

type ringRow struct {
	row  audit.Row
	line []byte
}

func reportBad(stderr io.Writer, bad ndjson.BadLines) {
	if bad.Count > 0 {
		fmt.Fprintf(stderr, "toolhost: %s (not audit rows)\n", bad)
	}
}

// sinceValue is --since: an age before now or an instant.
type sinceValue struct {
	age  time.Duration
	when time.Time
	text string
}

func (v *sinceValue) String() string { return v.text }
func (v *sinceValue) Type() string   { return "age|time" }

// Set accepts a Go duration, a number of days ("7d"), a date or an
// RFC 3339 time.
func (v *sinceValue) Set(s string) error {
	*v = sinceValue{text: s}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		v.age = d
		return nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days > 0 {
			v.age = time.Duration(days) * 24 * time.Hour
			return nil
		}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			v.when = t
			return nil
		}
	}
	return fmt.Errorf("want an age (15m, 24h, 7d) or a time (2026-12-01, 2026-12-01T10:00:00Z), not %q", s)
}

func (v *sinceValue) at(now time.Time) time.Time {
	if v.age > 0 {
		return now.Add(-v.age)
	}
	return v.when
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
			w := cmd.OutOrStdout()
			if f.asJSON {
				return f.each(cmd.Context(), cmd.ErrOrStderr(), func(r *audit.Row, _ []byte) error { return writeJSONLine(w, r) })
			}
			// The table is aligned per block of rows, so a trail of any size
			// streams through it in bounded memory.
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tAGENT\tTOOL\tSTATUS\tKIND\tRULE\tRETRIES\tMS\tCALL_ID\tERROR")
			n := 0
			err := f.each(cmd.Context(), cmd.ErrOrStderr(), func(r *audit.Row, _ []byte) error {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.1f\t%s\t%s\n", r.TS.UTC().Format("2006-01-02T15:04:05.000Z"),
					cell(r.Agent, maxCell), cell(r.Tool, maxCell), cell(string(r.Status), maxCell), cell(dash(r.ErrorKind), maxCell),
					cell(dash(r.Rule), maxCell), r.RetryCount, r.DurationMS, cell(r.CallID, maxCell), oneLine(r.Error, 80))
				if n++; n%tableBlock == 0 {
					return tw.Flush()
				}
				return nil
			})
			if err != nil {
				return err
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
			"duration in milliseconds (nearest rank; for a tool with more than 4096 calls estimated within 1%, marked\n" +
			"approx in --json). Superseded confirmations are not calls and are left out. It streams the trail and\n" +
			"its rotated files in bounded memory.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.limit != 0 {
				return usageErr(errors.New("audit stats summarises every matching row; --limit is for the list"))
			}
			st, err := f.trail()
			if err != nil {
				return err
			}
			defer st.Close()
			stats, bad, err := st.Audit().Stats(cmd.Context(), f.filterNow())
			if err != nil {
				return err
			}
			reportBad(cmd.ErrOrStderr(), bad)
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
	cmd.AddCommand(newAuditVerifyCmd(&f), newAuditExportCmd(&f))
	return cmd
}

// tableBlock is how many rows the audit table aligns at a time.
const tableBlock = 1000

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
// callers sent (a call id, a tool name, arguments), so every character
// visible.Line escapes is escaped (\n, \t, \x1b, \u202e, \xff) and the
// cell is cut to n runes, so that no field can break the table, recolour
// the terminal or pass for another row.
func cell(s string, n int) string {
	var b strings.Builder
	count := 0
	for i, r := range s {
		if count == n-1 && utf8.RuneCountInString(s[i:]) > 1 {
			b.WriteString("…")
			break
		}
		count++
		size := utf8.RuneLen(r)
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			size = 1
		}
		b.WriteString(visible.Line(s[i : i+size]))
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
