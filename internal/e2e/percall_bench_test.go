package e2e

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// BenchmarkPerCallAB settles a per-call change to within a few per cent on
// a shared machine: this tree's build and every binary TOOLHOST_AB_BINS
// names (colon-separated) serve BenchmarkPeers' call (parse_placeholder
// through the whole gate, an audit row per call), one long-lived server
// each, in many short rounds — per round and build a block of sequential
// calls and a block with 8 in flight, the builds' order rotated — so every
// pair of blocks compared saw the same moment of the machine. For each
// other build it reports the median over rounds of the paired ratio (this
// build / that one) of calls/s sequential and 8 in flight and of the
// server's CPU per call, and logs that median's 95 % confidence interval
// (order statistics) and the min–max:
//
//	TOOLHOST_AB_BINS=/tmp/a:/tmp/b go test -run '^$' -bench PerCallAB -benchtime 1x ./internal/e2e
func BenchmarkPerCallAB(b *testing.B) {
	const (
		rounds   = 40
		seqCalls = 1500
		c8Calls  = 3000
	)
	var others []string
	if v := os.Getenv("TOOLHOST_AB_BINS"); v != "" {
		others = strings.Split(v, ":")
	}
	if len(others) == 0 {
		b.Skip("TOOLHOST_AB_BINS names no build to compare with")
	}
	serve := func(bin string) *peer {
		return &peer{name: filepath.Base(bin), call: benchCall, argv: func(dir string) []string {
			return []string{bin, "serve", "--agent", "integrator", "--project-dir", dir, "--log-level", "warn"}
		}}
	}
	builds := []*peer{serve(testutil.Toolhost(b))}
	builds[0].name = "this"
	for _, bin := range others {
		builds = append(builds, serve(bin))
	}
	for n := 0; n < b.N; n++ {
		servers := make([]*loadServer, len(builds))
		for i, p := range builds {
			servers[i] = p.start(b)
			defer servers[i].stop()
			sequentialLoad(b, servers[i], benchCall, 200) // warm
		}
		fig := make([]map[string][]float64, len(builds))
		for i := range fig {
			fig[i] = map[string][]float64{}
		}
		for r := 0; r < rounds; r++ {
			for k := range builds {
				i := (k + r) % len(builds)
				s := servers[i]
				cpu0 := s.cpuNS()
				lat, el := sequentialLoad(b, s, benchCall, seqCalls)
				fig[i]["seq"] = append(fig[i]["seq"], float64(len(lat))/el.Seconds())
				lat, el = concurrentLoad(b, s, benchCall, c8Calls, 8)
				fig[i]["c8"] = append(fig[i]["c8"], float64(len(lat))/el.Seconds())
				fig[i]["cpu"] = append(fig[i]["cpu"], float64(s.cpuNS()-cpu0)/1e3/(seqCalls+c8Calls))
			}
		}
		for i := 1; i < len(builds); i++ {
			for _, w := range []string{"seq", "c8", "cpu"} {
				rs := make([]float64, rounds)
				for r := range rs {
					rs[r] = fig[0][w][r] / fig[i][w][r]
				}
				lo, hi := medianCI(rs)
				b.Logf("this/%s %s: median %.3f, 95%% CI [%.3f–%.3f], min–max %s; absolute: this %s, %s %s",
					builds[i].name, w, medianF(rs), lo, hi, ranges(rs), ranges(fig[0][w]), builds[i].name, ranges(fig[i][w]))
				b.ReportMetric(medianF(rs), w+"-x-"+builds[i].name)
			}
		}
	}
}

// medianCI is a distribution-free 95 % confidence interval of the median
// of v: the order statistics n/2 ∓ 0.98·√n.
func medianCI(v []float64) (lo, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := float64(len(s))
	d := 0.98 * math.Sqrt(n)
	i := max(0, int(math.Floor(n/2-d)))
	j := min(len(s)-1, int(math.Ceil(n/2+d))-1)
	return s[i], s[j]
}
