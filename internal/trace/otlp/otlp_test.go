package otlp

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/spantest"
	"github.com/toolhost/toolhost/internal/trace"
)

func TestFromEnvExportsOnlyWhenAsked(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"otlp named", map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, true},
		{"both none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, false},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{"only an exporter toolhost lacks", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "prometheus"}, false},
		{"service name alone", map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spantest.ClearEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			logs := &testutil.SyncBuffer{}
			before := runtime.NumGoroutine()
			p, err := FromEnv(context.Background(), trace.Options{Log: zerolog.New(logs)})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background())
			if (p != nil) != c.want {
				t.Fatalf("FromEnv = %v, want a provider: %v", p, c.want)
			}
			if p == nil && runtime.NumGoroutine() != before {
				t.Errorf("nothing exported, yet goroutines went from %d to %d", before, runtime.NumGoroutine())
			}
			if strings.Contains(c.name, "lacks") && !strings.Contains(logs.String(), `"exporter":"console"`) {
				t.Errorf("an exporter toolhost does not ship is logged: %s", logs)
			}
		})
	}
}

// flakyExporter fails while down is set, and can hang until released.
type flakyExporter struct {
	tries   atomic.Int32
	down    atomic.Bool
	hang    chan struct{}
	mu      sync.Mutex
	batches [][]sdktrace.ReadOnlySpan
}

func (f *flakyExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	f.tries.Add(1)
	if f.hang != nil {
		select {
		case <-f.hang:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.down.Load() {
		return errors.New("connection refused")
	}
	f.mu.Lock()
	f.batches = append(f.batches, spans)
	f.mu.Unlock()
	return nil
}

func (f *flakyExporter) Shutdown(context.Context) error { return nil }

func TestExportFailureIsLoggedOnce(t *testing.T) {
	spantest.ClearEnv(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	exp := &flakyExporter{}
	exp.down.Store(true)
	logs := &testutil.SyncBuffer{}
	p, _ := New(Exporters{Spans: exp}, trace.Options{Log: zerolog.New(logs)})
	s := p.Session(trace.Identity{SessionID: "s"})
	end := func(n int) {
		for range n {
			_, c := s.Call(context.Background(), "t", "c", trace.Parent{})
			c.End(trace.Outcome{Status: audit.StatusOK})
		}
		time.Sleep(50 * time.Millisecond)
	}
	end(5)
	end(5)
	if n := strings.Count(logs.String(), "otel_export_failed"); n != 1 {
		t.Fatalf("a failing collector is logged once, got %d times:\n%s", n, logs)
	}
	if n := exp.tries.Load(); n != 1 {
		t.Fatalf("a collector that failed is tried again after 1 s, not per batch: %d tries in ~100 ms", n)
	}
	// While it is down, the next try waits (1 s, then longer): the batches
	// in between are dropped without being encoded or sent.
	exp.down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "otel_export_recovered") {
		if time.Now().After(deadline) {
			t.Fatalf("the recovery is logged:\n%s", logs)
		}
		end(1)
	}
	exp.down.Store(true)
	end(2)
	// Down at shutdown: what is queued is dropped at once, not waited for.
	_, c := s.Call(context.Background(), "t", "c", trace.Parent{})
	c.End(trace.Outcome{Status: audit.StatusOK})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "otel_export_dropped") {
		t.Errorf("what a dead collector cost is logged at shutdown:\n%s", logs)
	}
}

// TestHangingExporterBoundsMemoryAndShutdown: while an export hangs, spans
// beyond the queue are dropped (never blocking the caller), and Shutdown
// returns when its context ends.
func TestHangingExporterBoundsMemoryAndShutdown(t *testing.T) {
	spantest.ClearEnv(t)
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "100")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10")
	exp := &flakyExporter{hang: make(chan struct{})}
	logs := &testutil.SyncBuffer{}
	p, _ := New(Exporters{Spans: exp}, trace.Options{Log: zerolog.New(logs)})
	s := p.Session(trace.Identity{SessionID: "s"})
	for range 1000 {
		_, c := s.Call(context.Background(), "t", "c", trace.Parent{})
		c.End(trace.Outcome{Status: audit.StatusOK})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a flush that could not finish reports it")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return when its context ended")
	}
	close(exp.hang)
	if !strings.Contains(logs.String(), "otel_queue_full") {
		t.Errorf("a full queue is logged:\n%s", logs)
	}
}

func TestBatcherExportsFullBatchesAtOnceAndTheRestOnSchedule(t *testing.T) {
	spantest.ClearEnv(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
	exp := &flakyExporter{}
	b := newBatcher(exp, func(int) {})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	tr := tp.Tracer("t")
	for range 9 {
		_, sp := tr.Start(context.Background(), "x")
		sp.End()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		exp.mu.Lock()
		n := len(exp.batches)
		exp.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	exp.mu.Lock()
	sizes := []int{}
	for _, bt := range exp.batches {
		sizes = append(sizes, len(bt))
	}
	exp.mu.Unlock()
	if len(sizes) != 2 || sizes[0] != 4 || sizes[1] != 4 {
		t.Fatalf("full batches go at once, the rest waits: %v", sizes)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(exp.batches) != 3 || len(exp.batches[2]) != 1 {
		t.Fatalf("shutdown flushes the rest: %d batches", len(exp.batches))
	}
}
