package e2e

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	_, rows := writeChainedTrail(b, dir, size)
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

// BenchmarkScaleAuditVerify runs `toolhost audit verify` on chained trails
// of 10 MB, 100 MB and 1 GB (rotated every 64 MiB with the chain's rotate
// and continue records, and a checkpoint at the end, as the sink lays them
// out) and `sha256sum` on the same files in the same round: verify hashes
// every line and reads its chain fields, so sha256sum's throughput is its
// bound. Per size it reports the wall time of each (best of three) and
// verify's throughput as a share of sha256sum's (target ≥ 0.5), by wall
// time and by CPU time (user and system: what a loaded machine does not
// blur); the log line has the growth exponent of verify's CPU time between
// sizes. Each trail is removed before the next is written.
//
//	go test -run '^$' -bench ScaleAuditVerify -benchtime 1x ./internal/e2e
func BenchmarkScaleAuditVerify(b *testing.B) {
	bin := testutil.Toolhost(b)
	sizes := []int{10 << 20, 100 << 20, 1 << 30}
	for b.Loop() {
		var verifyS []float64
		line := "audit verify:"
		for _, size := range sizes {
			dir, err := os.MkdirTemp("", "toolhost-verify-")
			if err != nil {
				b.Fatal(err)
			}
			files, rows := writeChainedTrail(b, dir, int64(size))
			var verify, sum, verifyCPU, sumCPU []float64
			for range 3 {
				cmd := exec.Command(bin, "audit", "verify", "--project-dir", dir, "--json")
				start := time.Now()
				out, err := cmd.Output()
				verify = append(verify, time.Since(start).Seconds())
				var v audit.Verification
				if err != nil || json.Unmarshal(out, &v) != nil || v.Problem != nil || v.Rows != int64(rows) {
					b.Fatalf("verify at %d MiB: %v %.300s", size>>20, err, out)
				}
				verifyCPU = append(verifyCPU, cpuSeconds(cmd))
				cmd = exec.Command("sha256sum", files...)
				start = time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("sha256sum: %v %s", err, out)
				}
				sum = append(sum, time.Since(start).Seconds())
				sumCPU = append(sumCPU, cpuSeconds(cmd))
			}
			os.RemoveAll(dir)
			v, s := slices.Min(verify), slices.Min(sum)
			vc, sc := slices.Min(verifyCPU), slices.Min(sumCPU)
			mib := size >> 20
			b.ReportMetric(v*1000, fmt.Sprintf("verify-ms@%dMiB", mib))
			b.ReportMetric(s*1000, fmt.Sprintf("sha256sum-ms@%dMiB", mib))
			b.ReportMetric(s/v, fmt.Sprintf("x-sha256sum@%dMiB", mib))
			b.ReportMetric(sc/vc, fmt.Sprintf("x-sha256sum-cpu@%dMiB", mib))
			line += fmt.Sprintf(" %d MiB (%d rows) verify %.4g s (%.0f MiB/s; CPU %.4g s), sha256sum %.4g s (%.0f MiB/s; CPU %.4g s): %.2f× its throughput (%.2f× by CPU)",
				mib, rows, v, float64(mib)/v, vc, s, float64(mib)/s, sc, s/v, sc/vc)
			if len(verifyS) > 0 {
				line += fmt.Sprintf(" [exp %.2f]", growth(sizes[len(verifyS)-1], size, verifyS[len(verifyS)-1], vc))
			}
			line += ";"
			verifyS = append(verifyS, vc)
		}
		b.Log(strings.TrimSuffix(line, ";"))
	}
}

// cpuSeconds is the user and system time of a finished command.
func cpuSeconds(cmd *exec.Cmd) float64 {
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
}

// writeChainedTrail writes a trail of size bytes whose chain verifies, the
// way the sink lays it out: rows of 40 tools and six outcomes (what stats
// count), a start record, rows chained with AppendChained, a rotate record ending
// each 64 MiB file and a continue record opening the next, and the
// checkpoint at its last line; buffered, so a gigabyte takes seconds. It
// returns the trail's files (oldest first) and how many call rows.
func writeChainedTrail(b *testing.B, dir string, size int64) ([]string, int) {
	b.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".toolhost"), 0o755); err != nil {
		b.Fatal(err)
	}
	live := filepath.Join(dir, filepath.FromSlash(audit.Path))
	rng := rand.New(rand.NewPCG(7, 7))
	statuses := []audit.Status{audit.StatusOK, audit.StatusOK, audit.StatusOK, audit.StatusOKFalse, audit.StatusRejected, audit.StatusError}
	ts := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	id := audit.NewChainID()
	var (
		f      *os.File
		w      *bufio.Writer
		inFile int64
		total  int64
		seq    int64
		prev   [32]byte
		files  []string
		rows   int
		buf    []byte
	)
	put := func(line []byte) {
		seq++
		prev = audit.LineHash(line)
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
		_ = w.WriteByte('\n')
		inFile += int64(len(line)) + 1
		total += int64(len(line)) + 1
	}
	open := func() {
		var err error
		if f, err = os.Create(live); err != nil {
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
	put(audit.ChainRecordLine(ts, &audit.ChainRecord{Event: audit.ChainStart, ID: id, Project: "bench", Dir: dir}, 1, prev))
	for total < size {
		if inFile >= audit.DefaultMaxBytes {
			to := ndjson.RotatedName(audit.Path, len(files)+1)
			put(audit.ChainRecordLine(ts, &audit.ChainRecord{Event: audit.ChainRotate, ID: id, To: to}, seq+1, prev))
			closeFile()
			rotated := filepath.Join(dir, filepath.FromSlash(to))
			if err := os.Rename(live, rotated); err != nil {
				b.Fatal(err)
			}
			files = append(files, rotated)
			open()
			put(audit.ChainRecordLine(ts, &audit.ChainRecord{Event: audit.ChainContinue, ID: id, Project: "bench", Dir: dir, From: to}, seq+1, prev))
		}
		r := &audit.Row{
			TS: ts.Add(time.Duration(rows) * time.Millisecond), CallID: fmt.Sprintf("01JBENCH%018d", rows), SessionID: "sess-bench",
			Agent: "devloop-coder", Tool: fmt.Sprintf("tool_%02d", rng.IntN(40)), Source: "builtin",
			Arguments: json.RawMessage(`{"path":"units/api/src/x.ts","op":"write"}`), Status: statuses[rng.IntN(len(statuses))],
			DurationMS: rng.ExpFloat64() * 3,
		}
		buf = r.AppendJSON(buf[:0])
		put(audit.AppendChained(nil, buf[:len(buf)-1], seq+1, prev))
		rows++
	}
	closeFile()
	files = append(files, live)
	cp, _ := json.Marshal(audit.Checkpoint{ID: id, Seq: seq, SHA256: hex.EncodeToString(prev[:]), TS: ts})
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(audit.CheckpointPath)), cp, 0o644); err != nil {
		b.Fatal(err)
	}
	return files, rows
}
