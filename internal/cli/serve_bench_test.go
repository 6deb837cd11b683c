package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServeInProcess runs `toolhost serve` in this process over
// in-memory pipes with 8 calls in flight: the whole server (framing,
// dispatch, pipeline, audit file writes, result encoding) without the pipe
// syscalls and the client process of the stdio benchmarks in internal/e2e.
// Its ns/op and allocs/op are steadier than a two-process run on a busy
// host, so it is the one to compare CPU-level changes with (benchstat).
func BenchmarkServeInProcess(b *testing.B) {
	serveInProcess(b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"parse_placeholder","arguments":{"text":"ping {{var:x}}","vars":{"x":1}}}}`+"\n")
}

// BenchmarkServeInProcess2026 is the same load from a 2026-07-28 client:
// the revision, client identity and capabilities in every request's _meta.
func BenchmarkServeInProcess2026(b *testing.B) {
	serveInProcess(b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"parse_placeholder","arguments":{"text":"ping {{var:x}}","vars":{"x":1}},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n")
}

// BenchmarkServeInProcessTraced is BenchmarkServeInProcess exporting spans
// and metrics over OTLP/HTTP to a loopback receiver in this process that
// discards them: what tracing costs in CPU per call, export included.
func BenchmarkServeInProcessTraced(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	b.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	serveInProcess(b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"parse_placeholder","arguments":{"text":"ping {{var:x}}","vars":{"x":1}}}}`+"\n")
}

func serveInProcess(b *testing.B, call string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	root := NewRoot(inR, outW, io.Discard)
	root.SetArgs([]string{"serve", "--agent", "integrator", "--project-dir", b.TempDir(), "--log-level", "warn"})
	served := make(chan error, 1)
	go func() { served <- root.Execute(); _ = outW.Close() }()
	out := bufio.NewReaderSize(outR, 1<<16)

	const inflight = 8
	slots := make(chan struct{}, inflight)
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	go func() {
		for n := 0; n < b.N; n++ {
			line, err := out.ReadBytes('\n')
			if err != nil || !bytes.Contains(line, []byte(`"ok":true`)) {
				done <- fmt.Errorf("response %d: %v %s", n, err, line)
				return
			}
			<-slots
		}
		done <- nil
	}()
	w := bufio.NewWriter(inW)
	for i := 1; i <= b.N; i++ {
		slots <- struct{}{}
		fmt.Fprintf(w, call, i)
		if len(slots) == inflight || i == b.N {
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	_ = inW.Close()
	if err := <-served; err != nil {
		b.Fatal(err)
	}
}

// processCPU is the user+system CPU time this process has used: on a
// shared host it moves less with the neighbours than wall time does.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
