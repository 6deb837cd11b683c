package dashboard_test

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// BenchmarkStartScale: a dashboard started on a project with 1 GB and with
// 10 GB of audit rows (rotated as the sink lays them out; each trail is
// removed before the next is written). One round starts the real binary
// and reads the page and the state that holds the newest rows, three
// rounds per size; page-ms is from the start to the page served, state-ms
// to the state answered (the trail read from its end, so neither should
// grow with the trail: the log has the growth exponent).
// TOOLHOST_TEST_AUDIT_BYTES runs one other size instead.
//
//	go test -run '^$' -bench StartScale -benchtime 1x ./internal/dashboard
func BenchmarkStartScale(b *testing.B) {
	sizes := []int64{1 << 30, 10 << 30}
	if s := os.Getenv("TOOLHOST_TEST_AUDIT_BYTES"); s != "" {
		var size int64
		if _, err := fmt.Sscan(s, &size); err != nil {
			b.Fatal(err)
		}
		sizes = []int64{size}
	}
	testutil.Toolhost(b)
	for b.Loop() {
		line := "dashboard first state:"
		var prev float64
		for i, size := range sizes {
			page, state := startOnTrail(b, size)
			gib := float64(size) / (1 << 30)
			b.ReportMetric(page, fmt.Sprintf("page-ms@%gGiB", gib))
			b.ReportMetric(state, fmt.Sprintf("state-ms@%gGiB", gib))
			line += fmt.Sprintf(" %g GiB page %.4g ms, state %.4g ms", gib, page, state)
			if i > 0 {
				line += fmt.Sprintf(" [exp %.2f]", math.Log(state/prev)/math.Log(float64(size)/float64(sizes[i-1])))
			}
			line += ";"
			prev = state
		}
		b.Log(strings.TrimSuffix(line, ";"))
	}
}

// startOnTrail writes a trail of size bytes in a directory of its own,
// starts a dashboard on it three times and returns the median page-ms and
// state-ms; the directory is removed before it returns.
func startOnTrail(b *testing.B, size int64) (page, state float64) {
	dir, err := os.MkdirTemp("", "toolhost-dash-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err == nil && int64(fs.Bavail)*int64(fs.Bsize) < 2*size {
		b.Skipf("needs %d MiB free in %s for the trail", 2*size>>20, dir)
	}
	writeTrail(b, dir, size)
	var pages, states []float64
	for range 3 {
		start := time.Now()
		d := runDashboard(b, "--project-dir", dir)
		if status, _ := d.get(b, "/", nil); status != http.StatusOK {
			b.Fatalf("GET / = %d", status)
		}
		pages = append(pages, ms(time.Since(start)))
		s := d.state(b)
		states = append(states, ms(time.Since(start)))
		if len(s.Audit) == 0 || s.Audit[0].CallID != "newest-0099" {
			b.Fatalf("the state does not start with the newest row: %+v", s.Audit[:min(1, len(s.Audit))])
		}
		d.stop(b)
	}
	return median(pages), median(states)
}

// BenchmarkLive: one op is a call by a running `toolhost serve` until its
// row arrives on an event stream the dashboard serves; p50-ms and p99-ms
// are of that latency (the page adds only its rendering).
func BenchmarkLive(b *testing.B) {
	dir := b.TempDir()
	pm := testutil.Serve(b, "--project-dir", dir, "--agent", "pm", "--session", "sess-bench-live")
	d := runDashboard(b, "--project-dir", dir)
	stream := openSSE(b, d.URL+"api/events", "")
	stream.next(b, "snapshot")
	var took []float64
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("call-bench-%d", i)
		testutil.CallToolMeta(b, pm, "timeline_append", map[string]any{"kind": "note", "message": "bench"}, map[string]any{"call_id": id})
		start := time.Now()
		for !strings.Contains(stream.next(b, "audit").data, `"`+id+`"`) {
		}
		took = append(took, ms(time.Since(start)))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2], "p50-ms")
	b.ReportMetric(took[min(len(took)-1, len(took)*99/100)], "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
