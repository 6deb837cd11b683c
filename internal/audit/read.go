package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"sort"
	"time"

	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// Filter selects rows; zero fields match everything.
type Filter struct {
	Tool   string
	Status string
	Agent  string
	// ClientSession keeps the rows of one agent CLI session (Claude
	// Code's session_id: all its agents' calls and hook decisions).
	ClientSession string
	// Since keeps rows at or after this instant (and lets readers pass over
	// rotated files written before it).
	Since time.Time
}

// Match reports whether r passes the filter.
func (f Filter) Match(r *Row) bool {
	return (f.Tool == "" || r.Tool == f.Tool) &&
		(f.Status == "" || string(r.Status) == f.Status) &&
		(f.Agent == "" || r.Agent == f.Agent || "devloop-"+r.Agent == f.Agent) &&
		(f.ClientSession == "" || r.ClientSessionID == f.ClientSession) &&
		(f.Since.IsZero() || !r.TS.Before(f.Since))
}

// entry is a line of the trail as readers decode it: a row, or one of the
// chain's own records (which are not calls).
type entry struct {
	Row
	Chain *ChainRecord `json:"chain"`
}

// decode reads a line into e; reason says why a line is not an entry.
func (e *entry) decode(line []byte) (reason string) {
	*e = entry{}
	if wirejson.Unmarshal(line, e) != nil {
		return "not JSON"
	}
	if e.Chain == nil && e.Tool == "" && e.CallID == "" {
		return "not an audit row"
	}
	return ""
}

// Read returns the rows of one audit file that pass f, in file order, and
// the number of lines that were not valid rows (a torn line after a
// machine crash, or foreign text). The chain's own records are passed
// over. It holds every row in memory: for a whole trail use Each.
func Read(r io.Reader, f Filter) (rows []*Row, bad int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 {
			var e entry
			switch {
			case json.Unmarshal(line, &e) != nil || e.Chain == nil && e.Tool == "" && e.CallID == "":
				bad++
			case e.Chain != nil:
			case f.Match(&e.Row):
				row := e.Row
				rows = append(rows, &row)
			}
		}
		if rerr == io.EOF {
			return rows, bad, nil
		}
		if rerr != nil {
			return rows, bad, rerr
		}
	}
}

// Each streams the rows of the project's trail that pass f, oldest first,
// across its rotated files, in constant memory; rotated files last written
// before f.Since are not opened. The row handed to fn is valid only until
// fn returns. Lines that are not rows are skipped and reported in the
// returned BadLines.
func Each(projectDir string, f Filter, fn func(*Row) error) (ndjson.BadLines, error) {
	return EachLine(projectDir, f, func(r *Row, _ []byte) error { return fn(r) })
}

// EachLine is Each that also hands fn the row's line as stored (without
// its newline), valid until fn returns.
func EachLine(projectDir string, f Filter, fn func(r *Row, line []byte) error) (ndjson.BadLines, error) {
	r, err := ndjson.OpenDir(projectDir, Path, ndjson.Options{Since: f.Since})
	if err != nil {
		return ndjson.BadLines{}, err
	}
	defer r.Close()
	var e entry
	for r.Next() {
		if reason := e.decode(r.Line()); reason != "" {
			r.Reject(reason)
			continue
		}
		if e.Chain != nil || !f.Match(&e.Row) {
			continue
		}
		if err := fn(&e.Row, r.Line()); err != nil {
			return r.Bad(), err
		}
	}
	return r.Bad(), r.Err()
}

// ToolStats summarises the rows of one tool.
type ToolStats struct {
	Tool     string  `json:"tool"`
	Count    int     `json:"count"`
	OK       int     `json:"ok"`
	OKFalse  int     `json:"ok_false"`
	Rejected int     `json:"rejected"`
	Failed   int     `json:"failed"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	// Approx is set when the tool had more than ExactDurations calls: its
	// percentiles then come from a histogram, within 1% of the true value.
	Approx bool `json:"approx,omitempty"`
}

// Stats groups rows by tool, sorted by tool name (see StatsBuilder).
func Stats(rows []*Row) []ToolStats {
	var b StatsBuilder
	for _, r := range rows {
		b.Add(r.Tool, r.Status, r.DurationMS)
	}
	return b.Result()
}

// StatsBuilder groups rows by tool as they stream past, in memory bounded
// per tool: durations are kept exactly up to ExactDurations per tool, then
// counted in logarithmic buckets. Failed counts timeouts, cancellations
// and errors; superseded confirmations and pin rows are not calls and are
// left out.
type StatsBuilder struct {
	by map[string]*toolAcc
}

// ExactDurations is how many durations per tool the percentiles are
// computed from exactly.
const ExactDurations = 4096

type toolAcc struct {
	ToolStats
	exact []float64
	hist  *histogram
}

// Add counts one row.
func (b *StatsBuilder) Add(tool string, status Status, durationMS float64) {
	if status == StatusSuperseded || status == StatusPin {
		return
	}
	if b.by == nil {
		b.by = map[string]*toolAcc{}
	}
	a := b.by[tool]
	if a == nil {
		a = &toolAcc{ToolStats: ToolStats{Tool: tool}}
		b.by[tool] = a
	}
	a.Count++
	switch status {
	case StatusOK:
		a.OK++
	case StatusOKFalse:
		a.OKFalse++
	case StatusRejected:
		a.Rejected++
	default:
		a.Failed++
	}
	switch {
	case a.hist != nil:
		a.hist.add(durationMS)
	case len(a.exact) < ExactDurations:
		a.exact = append(a.exact, durationMS)
	default:
		a.hist = &histogram{buckets: map[int]int{}, min: math.Inf(1), max: math.Inf(-1)}
		for _, d := range a.exact {
			a.hist.add(d)
		}
		a.exact = nil
		a.hist.add(durationMS)
	}
}

// Result returns the stats per tool, sorted by tool name.
func (b *StatsBuilder) Result() []ToolStats {
	out := make([]ToolStats, 0, len(b.by))
	for _, a := range b.by {
		s := a.ToolStats
		if a.hist != nil {
			// Rounded to the microsecond: the estimate is not more precise.
			s.P50MS, s.P99MS, s.Approx = roundMS(a.hist.percentile(50)), roundMS(a.hist.percentile(99)), true
		} else {
			sort.Float64s(a.exact)
			s.P50MS, s.P99MS = Percentile(a.exact, 50), Percentile(a.exact, 99)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// statsRow is the part of a line stats needs: decoding only these fields
// skips the arguments without copying them.
type statsRow struct {
	TS         time.Time    `json:"ts"`
	CallID     string       `json:"call_id"`
	Agent      string       `json:"agent"`
	Tool       string       `json:"tool"`
	Status     Status       `json:"status"`
	DurationMS float64      `json:"duration_ms"`
	Chain      *ChainRecord `json:"chain"`
}

// StatsOf streams the project's trail through f into per-tool stats, in
// bounded memory (StatsBuilder), reading across rotated files.
func StatsOf(projectDir string, f Filter) ([]ToolStats, ndjson.BadLines, error) {
	r, err := ndjson.OpenDir(projectDir, Path, ndjson.Options{Since: f.Since})
	if err != nil {
		return nil, ndjson.BadLines{}, err
	}
	defer r.Close()
	var (
		b   StatsBuilder
		sr  statsRow
		row Row
	)
	for r.Next() {
		sr = statsRow{}
		if wirejson.Unmarshal(r.Line(), &sr) != nil {
			r.Reject("not JSON")
			continue
		}
		if sr.Chain != nil {
			continue
		}
		if sr.Tool == "" && sr.CallID == "" {
			r.Reject("not an audit row")
			continue
		}
		row.TS, row.Agent, row.Tool, row.Status = sr.TS, sr.Agent, sr.Tool, sr.Status
		if f.Match(&row) {
			b.Add(sr.Tool, sr.Status, sr.DurationMS)
		}
	}
	return b.Result(), r.Bad(), r.Err()
}

func roundMS(v float64) float64 { return math.Round(v*1000) / 1000 }

// Percentile is the nearest-rank percentile p of sorted values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// histogram counts values in logarithmic buckets of ratio gamma, so a
// bucket's representative value is within (gamma-1)/(gamma+1) < 1% of every
// value in it (the scheme of DDSketch).
type histogram struct {
	buckets  map[int]int
	zero     int // values at or below minPositive
	n        int
	min, max float64
}

const (
	gamma       = 1.02
	minPositive = 1e-6
)

var logGamma = math.Log(gamma)

func (h *histogram) add(v float64) {
	h.n++
	h.min, h.max = math.Min(h.min, v), math.Max(h.max, v)
	if v <= minPositive {
		h.zero++
		return
	}
	h.buckets[int(math.Ceil(math.Log(v)/logGamma))]++
}

// percentile is the nearest-rank percentile p, as the representative value
// of the bucket holding that rank, clamped to the values seen.
func (h *histogram) percentile(p float64) float64 {
	rank := max(int(math.Ceil(p/100*float64(h.n))), 1)
	if rank <= h.zero {
		return math.Max(h.min, 0)
	}
	keys := make([]int, 0, len(h.buckets))
	for k := range h.buckets {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	seen := h.zero
	for _, k := range keys {
		seen += h.buckets[k]
		if seen >= rank {
			v := 2 * math.Pow(gamma, float64(k)) / (gamma + 1)
			return math.Min(math.Max(v, h.min), h.max)
		}
	}
	return h.max
}

// Follow delivers every row appended to the trail from o.From on (the end
// of the trail when nil), across rotations, until ctx ends: the feed of a
// live view. The chain's own records and lines that are not rows are passed
// over; next resumes after the row. The row is valid only until fn returns.
func Follow(ctx context.Context, root *os.Root, o ndjson.FollowOptions, fn func(r *Row, next ndjson.Cursor) error) error {
	var e entry
	return ndjson.Follow(ctx, root, Path, o, func(line []byte, next ndjson.Cursor) error {
		if e.decode(line) != "" || e.Chain != nil {
			return nil
		}
		return fn(&e.Row, next)
	})
}

// Backward hands fn the trail's rows newest first, across rotated files,
// reading from the end (ndjson.Backward), until fn returns false: what a
// live view shows when it starts. The chain's own records and lines that
// are not rows are passed over. It returns the cursor to Follow from so
// that no row written meanwhile is lost or repeated. The row is valid only
// until fn returns.
func Backward(root *os.Root, o ndjson.Options, fn func(r *Row) bool) (ndjson.Cursor, error) {
	var e entry
	return ndjson.Backward(root, Path, o, func(line []byte) bool {
		if e.decode(line) != "" || e.Chain != nil {
			return true
		}
		return fn(&e.Row)
	})
}

// ParseLine reads a line of the trail into r. row reports whether it is a
// call's row (false for one of the chain's own records, and for a line that
// is neither, whose reason says why): how every store's readers decode.
func ParseLine(line []byte, r *Row) (row bool, reason string) {
	var e entry
	if reason := e.decode(line); reason != "" {
		return false, reason
	}
	if e.Chain != nil {
		return false, ""
	}
	*r = e.Row
	return true, ""
}

// ChainOf returns the chain fields of a line: its seq (0 when the line is
// not part of the chain) and, for one of the chain's own records, the
// record.
func ChainOf(line []byte) (seq int64, rec *ChainRecord) {
	l, ok := link(line)
	if !ok {
		return 0, nil
	}
	return l.Seq, l.Chain
}
