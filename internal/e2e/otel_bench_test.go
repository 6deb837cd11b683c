package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/otelcol"
)

// BenchmarkStdioTracing measures what tracing costs a sequential stdio
// session (the StdioSequential load). Long-lived servers take turns, in
// rounds of b.N/10 calls each, so a shared machine's drift hits all of them
// alike (each round is followed by an untimed pause in which the exporters
// send what the round queued, so no server's export runs during another's
// round):
//
//	off      no OTEL_* variable: nothing is exported or started
//	http     exporting to a live collector over OTLP/HTTP (the real
//	         collector, writing what it receives to a file as binary OTLP)
//	grpc     the same over OTLP/gRPC
//	down     its collector's port has no listener (connection refused)
//	hung     its collector accepts connections and never answers
//	base     with TOOLHOST_BASE_BIN=path, that binary (a build without
//	         tracing) with no OTEL_* variable
//
// Each reports calls/s, its cost against off (and off's against base) in
// percent, the server's CPU time per call (export included; in 10 ms
// ticks, so meaningful over thousands of calls, and less moved by other
// processes' load than calls/s), and the server's anonymous RSS at the end: a dead or hanging
// collector must cost bounded memory (the export queue), not a growing one.
//
//	go test -run '^$' -bench StdioTracing -benchtime 20000x ./internal/e2e
func BenchmarkStdioTracing(b *testing.B) {
	col := otelcol.StartForLoad(b)
	down := "http://" + deadAddr(b)
	hung := "http://" + hangingAddr(b)
	bin := testutil.Toolhost(b)
	env := withoutTelemetry(os.Environ())
	exporting := func(endpoint, proto string) []string {
		// Batches go out within 100 ms (not the SDK's 5 s), so a round's
		// export is done in the pause after it, not during the next
		// server's round.
		return append(env[:len(env):len(env)], "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+proto, "OTEL_BSP_SCHEDULE_DELAY=100")
	}
	type variant struct {
		name string
		s    *loadServer
		took time.Duration
		n    int
		// cpu is the server's CPU time over its rounds and the pauses
		// after them (where its exporter sends what the round queued).
		cpu int64
	}
	// --log-level error: the dead collector's one warning would land in
	// the middle of the benchmark's output line.
	vs := []*variant{
		{name: "off", s: startServer(b, bin, env, "--log-level", "error")},
		{name: "http", s: startServer(b, bin, exporting(col.HTTP, "http/protobuf"), "--grace", "5s", "--log-level", "error")},
		{name: "grpc", s: startServer(b, bin, exporting(col.GRPC, "grpc"), "--grace", "5s", "--log-level", "error")},
		{name: "down", s: startServer(b, bin, exporting(down, "http/protobuf"), "--grace", "1s", "--log-level", "error")},
		{name: "hung", s: startServer(b, bin, exporting(hung, "http/protobuf"), "--grace", "1s", "--log-level", "error")},
	}
	if base := os.Getenv("TOOLHOST_BASE_BIN"); base != "" {
		vs = append(vs, &variant{name: "base", s: startServer(b, base, env, "--log-level", "error")})
	}
	defer func() {
		var wg sync.WaitGroup
		for _, v := range vs {
			wg.Go(v.s.stop)
		}
		wg.Wait()
	}()
	// Warm every server up (page faults, pools) before anything is timed.
	id := 0
	run := func(v *variant, n int) {
		for range n {
			id++
			fmt.Fprintf(v.s.in, benchCall, id)
			if line, err := v.s.out.ReadBytes('\n'); err != nil || !bytes.Contains(line, []byte(`"ok":true`)) {
				b.Fatalf("%s: call %d: %v %s", v.name, id, err, line)
			}
		}
	}
	for _, v := range vs {
		run(v, 500)
	}
	const rounds = 10
	per := max(b.N/rounds, 1)
	b.ResetTimer()
	for range rounds {
		for _, v := range vs {
			c0 := v.s.cpuNS()
			t0 := time.Now()
			run(v, per)
			v.took += time.Since(t0)
			v.n += per
			b.StopTimer()
			time.Sleep(300 * time.Millisecond)
			v.cpu += v.s.cpuNS() - c0
			b.StartTimer()
		}
	}
	b.StopTimer()
	rate := map[string]float64{}
	for _, v := range vs {
		rate[v.name] = float64(v.n) / v.took.Seconds()
		b.ReportMetric(rate[v.name], v.name+"-calls/s")
		b.ReportMetric(float64(v.s.memKB("RssAnon"))/1024, v.name+"-anon-MiB")
		b.ReportMetric(float64(v.cpu)/float64(v.n)/1000, v.name+"-server-cpu-µs/call")
	}
	for _, v := range vs {
		if v.name != "off" && v.name != "base" {
			b.ReportMetric(100*(rate["off"]/rate[v.name]-1), v.name+"-cost-%")
		}
	}
	if r, ok := rate["base"]; ok {
		b.ReportMetric(100*(r/rate["off"]-1), "off-vs-base-cost-%")
	}
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(b testing.TB) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// hangingAddr is a loopback address that accepts connections and never
// reads or answers, until the benchmark ends.
func hangingAddr(b testing.TB) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
