package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/testutil"
)

// BenchmarkAuditStats1GB runs `toolhost audit stats` on a 1 GB audit trail
// (about 4 million rows of 40 tools in 64 MiB rotated files, as the sink
// lays them out) and reports its wall time and peak RSS: the readers
// stream, so memory must not grow with the trail.
// TOOLHOST_BENCH_AUDIT_BYTES sets another size.
//
//	go test -run '^$' -bench AuditStats1GB -benchtime 1x ./internal/e2e
func BenchmarkAuditStats1GB(b *testing.B) {
	size := int64(1 << 30)
	if s := os.Getenv("TOOLHOST_BENCH_AUDIT_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	bin := testutil.Toolhost(b)
	dir := b.TempDir()
	rows := writeBigTrail(b, dir, size)
	b.ResetTimer()
	var wall time.Duration
	var rss int64
	for b.Loop() {
		cmd := exec.Command(bin, "audit", "stats", "--project-dir", dir, "--json")
		start := time.Now()
		out, err := cmd.Output()
		wall = time.Since(start)
		if err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		rss = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
		var s audit.ToolStats
		if err := json.Unmarshal(out[:indexNL(out)], &s); err != nil || s.Count == 0 {
			b.Fatalf("stats output %.200s: %v", out, err)
		}
	}
	b.ReportMetric(float64(size)/(1<<20), "trail-MiB")
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(wall.Seconds(), "stats-s")
	b.ReportMetric(float64(rss)/1024, "peak-RSS-MiB")
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return len(b)
}

// writeBigTrail writes a trail of size bytes the way the sink lays it out —
// rows with their chain fields, rotated every 64 MiB into numbered files —
// but buffered, so a gigabyte takes seconds; it returns how many rows. (The
// readers do not check the chain; audit verify is tested elsewhere.)
func writeBigTrail(b *testing.B, dir string, size int64) int {
	b.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	statuses := []audit.Status{audit.StatusOK, audit.StatusOK, audit.StatusOK, audit.StatusOKFalse, audit.StatusRejected, audit.StatusError}
	ts := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	prev := strings.Repeat("ab", 32)
	var (
		written, inFile int64
		f               *os.File
		w               *bufio.Writer
		index           int
	)
	open := func() {
		if err := os.MkdirAll(filepath.Join(dir, ".toolhost"), 0o755); err != nil {
			b.Fatal(err)
		}
		var err error
		f, err = os.Create(filepath.Join(dir, filepath.FromSlash(audit.Path)))
		if err != nil {
			b.Fatal(err)
		}
		w, inFile = bufio.NewWriterSize(f, 1<<20), 0
	}
	closeFile := func() {
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	open()
	n := 0
	var line []byte
	for written < size {
		r := &audit.Row{
			TS: ts.Add(time.Duration(n) * time.Millisecond), CallID: fmt.Sprintf("01JBENCH%018d", n), SessionID: "sess-bench",
			Agent: "devloop-coder", Tool: fmt.Sprintf("tool_%02d", rng.IntN(40)), Source: "builtin",
			Arguments: json.RawMessage(`{"path":"units/api/src/x.ts","op":"write"}`), Status: statuses[rng.IntN(len(statuses))],
			DurationMS: rng.ExpFloat64() * 3, Seq: int64(n + 1), Prev: prev,
		}
		line = append(r.AppendJSON(line[:0]), '\n')
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
		n++
		written += int64(len(line))
		if inFile += int64(len(line)); inFile >= audit.DefaultMaxBytes {
			closeFile()
			index++
			if err := os.Rename(filepath.Join(dir, filepath.FromSlash(audit.Path)), filepath.Join(dir, filepath.FromSlash(ndjson.RotatedName(audit.Path, index)))); err != nil {
				b.Fatal(err)
			}
			open()
		}
	}
	closeFile()
	return n
}
