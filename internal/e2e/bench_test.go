package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// The stdio benchmarks drive the real binary with a lean client of their
// own (pre-encoded requests, responses matched by id without decoding), so
// the figures are the server's, not an SDK's. They report calls/s, p50/p99
// latency, cold start and peak RSS as custom metrics:
//
//	make bench   (or: go test -run '^$' -bench Stdio -benchtime 20000x ./internal/e2e)

// benchCall is the cheap read-only call the load runs: a real tool of the
// release build (parse_placeholder, Integrator), whose whole pipeline —
// policy, validation, ctx, timeout, audit row — runs per call.
const benchCall = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"parse_placeholder","arguments":{"text":"ping {{var:x}}","vars":{"x":1}}}}` + "\n"

// benchCall2026 is the same call as a 2026-07-28 client sends it: the
// revision, the client's identity and capabilities in every request's _meta
// (no initialize); the answer carries resultType and the serverInfo _meta.
const benchCall2026 = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"parse_placeholder","arguments":{"text":"ping {{var:x}}","vars":{"x":1}},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n"

type loadServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startLoadServer starts the binary under test with no OTEL_* variable
// (tracing off) and extra after the usual arguments.
func startLoadServer(b *testing.B, extra ...string) *loadServer {
	b.Helper()
	return startServer(b, testutil.Toolhost(b), withoutTelemetry(os.Environ()), extra...)
}

// startServer starts bin as an Integrator session with env as its whole
// environment and args after the usual ones.
func startServer(b *testing.B, bin string, env []string, args ...string) *loadServer {
	b.Helper()
	return startProcess(b, append([]string{bin, "serve", "--agent", "integrator", "--project-dir", b.TempDir(), "--log-level", "warn"}, args...), env)
}

// startProcess spawns argv with env as its whole environment and its stdio
// piped to the load client.
func startProcess(b *testing.B, argv, env []string) *loadServer {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &loadServer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}
}

func (s *loadServer) stop() {
	_ = s.in.Close()
	_ = s.cmd.Wait()
}

// memKB returns a field of the server's /proc status (VmRSS, VmHWM,
// RssAnon: the heap and stacks, without the binary's file-backed pages) in
// KiB.
func (s *loadServer) memKB(field string) int { return s.procKB("status", field) }

// procKB returns field of /proc/PID/<file> in KiB ("Pss" of smaps_rollup:
// the pages shared with other processes counted as a share of them).
func (s *loadServer) procKB(file, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", s.cmd.Process.Pid, file))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	return -1
}

// responseID extracts the numeric id of a response line without decoding it.
func responseID(line []byte) int {
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return -1
	}
	j := i + 5
	k := j
	for k < len(line) && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(string(line[j:k]))
	if err != nil {
		return -1
	}
	return n
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(float64(len(d)-1)*p)]
}

func report(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

func BenchmarkStdioSequential(b *testing.B)     { stdioSequential(b, benchCall) }
func BenchmarkStdioSequential2026(b *testing.B) { stdioSequential(b, benchCall2026) }

func stdioSequential(b *testing.B, call string) {
	s := startLoadServer(b)
	defer s.stop()
	b.ResetTimer()
	lat, elapsed := sequentialLoad(b, s, call, b.N)
	report(b, lat, elapsed)
	b.ReportMetric(float64(s.memKB("VmHWM"))/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(s.memKB("RssAnon"))/1024, "anon-RSS-MiB")
}

// sequentialLoad sends n calls (call is a format with the id's %d), each
// after the previous one's answer, and returns their latencies and the
// time they took.
func sequentialLoad(b *testing.B, s *loadServer, call string, n int) ([]time.Duration, time.Duration) {
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		fmt.Fprintf(s.in, call, i+1)
		line, err := s.out.ReadBytes('\n')
		if err != nil || !bytes.Contains(line, []byte(`"ok":true`)) {
			b.Fatalf("call %d: %v %s", i, err, line)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, time.Since(start)
}

func BenchmarkStdioConcurrent8(b *testing.B)      { stdioConcurrent8(b, benchCall) }
func BenchmarkStdioConcurrent8_2026(b *testing.B) { stdioConcurrent8(b, benchCall2026) }

func stdioConcurrent8(b *testing.B, call string) {
	s := startLoadServer(b)
	defer s.stop()
	b.ResetTimer()
	lat, elapsed := concurrentLoad(b, s, call, b.N, 8)
	report(b, lat, elapsed)
	b.ReportMetric(float64(s.memKB("VmHWM"))/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(s.memKB("RssAnon"))/1024, "anon-RSS-MiB")
}

// concurrentLoad sends n calls keeping inflight of them unanswered (written
// in batches, as a client with that many requests outstanding does) and
// returns their latencies and the time they took.
func concurrentLoad(b *testing.B, s *loadServer, call string, n, inflight int) ([]time.Duration, time.Duration) {
	sent := make([]time.Time, n+1)
	lat := make([]time.Duration, 0, n)
	slots := make(chan struct{}, inflight)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		for range n {
			line, err := s.out.ReadBytes('\n')
			if err != nil {
				b.Errorf("read: %v", err)
				return
			}
			id := responseID(line)
			if id <= 0 || id > n || !bytes.Contains(line, []byte(`"ok":true`)) {
				b.Errorf("bad response %s", line)
				return
			}
			lat = append(lat, time.Since(sent[id]))
			<-slots
		}
	}()
	w := bufio.NewWriterSize(s.in, 1<<16)
	for i := 1; i <= n; i++ {
		slots <- struct{}{}
		sent[i] = time.Now()
		fmt.Fprintf(w, call, i)
		if len(slots) == inflight || i == n {
			_ = w.Flush()
		}
	}
	<-done
	if b.Failed() {
		b.FailNow()
	}
	return lat, time.Since(start)
}

// BenchmarkColdStart measures spawn → initialize answered (a 2025 client);
// BenchmarkColdStart2026, spawn → server/discover answered (the probe a
// 2026-07-28 client opens with).
func BenchmarkColdStart(b *testing.B) {
	coldStart(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`, "protocolVersion")
}

func BenchmarkColdStart2026(b *testing.B) {
	coldStart(b, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "supportedVersions")
}

func coldStart(b *testing.B, request, want string) {
	bin := testutil.Toolhost(b)
	dir := b.TempDir()
	init := []byte(request + "\n")
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		cmd := exec.Command(bin, "serve", "--agent", "integrator", "--project-dir", dir, "--log-level", "warn")
		cmd.Env = withoutTelemetry(os.Environ())
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		_, _ = in.Write(init)
		line, err := bufio.NewReader(out).ReadBytes('\n')
		if err != nil || !bytes.Contains(line, []byte(want)) {
			b.Fatalf("first answer: %v %s", err, line)
		}
		lat = append(lat, time.Since(t0))
		_ = in.Close()
		_ = cmd.Wait()
	}
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "cold-start-p50-ms")
}

// BenchmarkStdioRSSGrowth runs 100k calls and reports RSS after 10k and 100k
// calls: a leak shows as growth. It also reports the working set of the
// steady state: the pages (file-backed and anonymous) the process touched
// between call 10k and call 100k, counted by clearing the kernel's
// referenced bits at 10k (/proc/PID/clear_refs) and reading them back at
// 100k. RSS minus that is what start-up mapped and serving never touched
// again (clean pages of the binary the kernel may reclaim).
func BenchmarkStdioRSSGrowth(b *testing.B) {
	for n := 0; n < b.N; n++ {
		s := startLoadServer(b)
		var at10k, anon10k int
		refsCleared := false
		for i := 1; i <= 100000; i++ {
			fmt.Fprintf(s.in, benchCall, i)
			if _, err := s.out.ReadBytes('\n'); err != nil {
				b.Fatal(err)
			}
			if i == 10000 {
				at10k, anon10k = s.memKB("VmRSS"), s.memKB("RssAnon")
				err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("1"), 0)
				if refsCleared = err == nil; !refsCleared {
					b.Logf("no working-set figure: %v", err)
				}
			}
		}
		if refsCleared {
			b.ReportMetric(float64(s.procKB("smaps_rollup", "Referenced"))/1024, "working-set-MiB")
		}
		at100k := s.memKB("VmRSS")
		b.ReportMetric(float64(at10k)/1024, "RSS@10k-MiB")
		b.ReportMetric(float64(at100k)/1024, "RSS@100k-MiB")
		b.ReportMetric(float64(anon10k)/1024, "anon@10k-MiB")
		b.ReportMetric(float64(s.memKB("RssAnon"))/1024, "anon@100k-MiB")
		b.ReportMetric(float64(s.memKB("VmHWM"))/1024, "peak-RSS-MiB")
		s.stop()
	}
}

// BenchmarkStdioSixSessions is the deployment the PRD describes: six agent
// sessions, each with its own toolhost, on one machine (all six run the same
// Integrator load here; memory does not depend on the agent). It runs 10k
// calls in each and reports what a session costs on average once the
// binary's file-backed pages (the same page cache for all six) are shared:
// PSS, and its anonymous part, next to the RSS each session shows.
func BenchmarkStdioSixSessions(b *testing.B) {
	const sessions, calls = 6, 10000
	for n := 0; n < b.N; n++ {
		var ss []*loadServer
		for range sessions {
			ss = append(ss, startLoadServer(b))
		}
		for i := 1; i <= calls; i++ {
			for _, s := range ss {
				fmt.Fprintf(s.in, benchCall, i)
			}
			for _, s := range ss {
				if line, err := s.out.ReadBytes('\n'); err != nil || !bytes.Contains(line, []byte(`"ok":true`)) {
					b.Fatalf("call %d: %v %s", i, err, line)
				}
			}
		}
		var rss, pss, pssAnon int
		for _, s := range ss {
			rss += s.procKB("smaps_rollup", "Rss")
			pss += s.procKB("smaps_rollup", "Pss")
			pssAnon += s.procKB("smaps_rollup", "Pss_Anon")
		}
		for _, s := range ss {
			s.stop()
		}
		b.ReportMetric(float64(rss)/sessions/1024, "RSS/session-MiB")
		b.ReportMetric(float64(pss)/sessions/1024, "PSS/session-MiB")
		b.ReportMetric(float64(pssAnon)/sessions/1024, "anon/session-MiB")
	}
}
