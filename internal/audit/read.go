package audit

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"sort"
	"time"
)

// Filter selects rows; zero fields match everything.
type Filter struct {
	Tool   string
	Status string
	Agent  string
	// Since keeps rows at or after this instant.
	Since time.Time
}

// Match reports whether r passes the filter.
func (f Filter) Match(r *Row) bool {
	return (f.Tool == "" || r.Tool == f.Tool) &&
		(f.Status == "" || r.Status == f.Status) &&
		(f.Agent == "" || r.Agent == f.Agent || "devloop-"+r.Agent == f.Agent) &&
		(f.Since.IsZero() || !r.TS.Before(f.Since))
}

// Read returns the rows of an audit file that pass f, in file order, and
// the number of lines that were not valid rows (a torn last line after a
// machine crash, or foreign text).
func Read(r io.Reader, f Filter) (rows []*Row, bad int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 {
			var row Row
			if json.Unmarshal(line, &row) != nil || row.Tool == "" && row.CallID == "" {
				bad++
			} else if f.Match(&row) {
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
}

// Stats groups rows by tool, sorted by tool name. Failed counts timeouts,
// cancellations and errors; superseded confirmations and pin rows are not
// calls and are left out.
func Stats(rows []*Row) []ToolStats {
	by := map[string]*ToolStats{}
	durs := map[string][]float64{}
	for _, r := range rows {
		if r.Status == StatusSuperseded || r.Status == StatusPin {
			continue
		}
		s := by[r.Tool]
		if s == nil {
			s = &ToolStats{Tool: r.Tool}
			by[r.Tool] = s
		}
		s.Count++
		switch r.Status {
		case StatusOK:
			s.OK++
		case StatusOKFalse:
			s.OKFalse++
		case StatusRejected:
			s.Rejected++
		default:
			s.Failed++
		}
		durs[r.Tool] = append(durs[r.Tool], r.DurationMS)
	}
	out := make([]ToolStats, 0, len(by))
	for name, s := range by {
		d := durs[name]
		sort.Float64s(d)
		s.P50MS, s.P99MS = Percentile(d, 50), Percentile(d, 99)
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// Percentile is the nearest-rank percentile p of sorted values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}
