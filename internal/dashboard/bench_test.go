package dashboard_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// BenchmarkStart1GB: a dashboard started on a project with 1 GB of audit
// rows (rotated as the sink lays them out). One op starts the real binary
// and reads the page and the state that holds the newest rows; page-ms is
// from the start to the page served, state-ms to the state answered (the
// trail read from its end). TOOLHOST_TEST_AUDIT_BYTES sets another size.
func BenchmarkStart1GB(b *testing.B) {
	size := int64(1 << 30)
	if s := os.Getenv("TOOLHOST_TEST_AUDIT_BYTES"); s != "" {
		if _, err := fmt.Sscan(s, &size); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err == nil && int64(fs.Bavail)*int64(fs.Bsize) < 3*size {
		b.Skipf("needs %d MiB free in %s for the trail", 3*size>>20, dir)
	}
	writeTrail(b, dir, size)
	testutil.Toolhost(b)
	var page, state []float64
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		d := runDashboard(b, "--project-dir", dir)
		if status, _ := d.get(b, "/", nil); status != http.StatusOK {
			b.Fatalf("GET / = %d", status)
		}
		page = append(page, ms(time.Since(start)))
		s := d.state(b)
		state = append(state, ms(time.Since(start)))
		if len(s.Audit) == 0 || s.Audit[0].CallID != "newest-0099" {
			b.Fatalf("the state does not start with the newest row: %+v", s.Audit[:min(1, len(s.Audit))])
		}
		b.StopTimer()
		d.stop(b)
		b.StartTimer()
	}
	b.ReportMetric(median(page), "page-ms")
	b.ReportMetric(median(state), "state-ms")
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
