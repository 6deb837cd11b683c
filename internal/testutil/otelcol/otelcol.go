package otelcol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// Install is the command that builds the collector.
const Install = "bash scripts/deps/80-otelcol.sh (or make deps)"

// Collector is a running collector.
type Collector struct {
	// GRPC and HTTP are the receiver's endpoints (http://127.0.0.1:PORT).
	GRPC, HTTP string
	dir        string
	cmd        *exec.Cmd
	log        *testutil.SyncBuffer
}

// Start runs the collector until the test ends; it fails the test under
// CI (and skips it elsewhere) when the collector is not built.
func Start(t testing.TB) *Collector {
	t.Helper()
	return start(t, "json")
}

// StartForLoad is Start for benchmarks: the file exporter writes the
// binary OTLP encoding, cheaper than JSON for the collector on a machine
// the load shares; Spans and Metrics read nothing of it.
func StartForLoad(t testing.TB) *Collector {
	t.Helper()
	return start(t, "proto")
}

func start(t testing.TB, format string) *Collector {
	t.Helper()
	bin := testutil.NeedDeps(t, ".deps/otelcol/otelcol", Install)
	dir := t.TempDir()
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  file/traces:
    path: %s
    format: %s
    flush_interval: 50ms
  file/metrics:
    path: %s
    format: %s
    flush_interval: 50ms
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file/traces]
    metrics:
      receivers: [otlp]
      exporters: [file/metrics]
`, grpcAddr, httpAddr, filepath.Join(dir, "traces."+format), format, filepath.Join(dir, "metrics."+format), format)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Collector{GRPC: "http://" + grpcAddr, HTTP: "http://" + httpAddr, dir: dir, log: &testutil.SyncBuffer{}}
	c.cmd = exec.Command(bin, "--config", cfgPath)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range []string{grpcAddr, httpAddr} {
		for {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("collector exited at start:\n%s", c.log.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("collector not listening on %s after 30 s:\n%s", addr, c.log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// Log is what the collector wrote to stdout and stderr.
func (c *Collector) Log() string { return c.log.String() }

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Span is one span as the collector received it.
type Span struct {
	TraceID, SpanID, ParentSpanID, Name string
	// Kind is OTLP's span kind: 1 internal, 2 server, 3 client.
	Kind int
	// Attrs are the span's attributes: strings, int64, bool or float64.
	Attrs  map[string]any
	Status struct {
		// Code is 0 unset, 1 ok, 2 error.
		Code    int
		Message string
	}
	Links []struct{ TraceID, SpanID string }
	// Resource are the attributes of the resource that sent it.
	Resource map[string]any
}

// Spans returns every span received so far.
func (c *Collector) Spans(t testing.TB) []Span {
	t.Helper()
	var out []Span
	c.lines(t, "traces.json", func(line []byte) {
		var doc struct {
			ResourceSpans []struct {
				Resource   struct{ Attributes []keyValue }
				ScopeSpans []struct {
					Spans []struct {
						TraceID      string `json:"traceId"`
						SpanID       string `json:"spanId"`
						ParentSpanID string `json:"parentSpanId"`
						Name         string
						Kind         int
						Attributes   []keyValue
						Status       struct {
							Code    int
							Message string
						}
						Links []struct {
							TraceID string `json:"traceId"`
							SpanID  string `json:"spanId"`
						}
					}
				}
			}
		}
		if err := json.Unmarshal(line, &doc); err != nil {
			t.Fatalf("collector traces line: %v\n%s", err, line)
		}
		for _, rs := range doc.ResourceSpans {
			res := attrs(rs.Resource.Attributes)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
						Attrs: attrs(s.Attributes), Resource: res}
					sp.Status.Code, sp.Status.Message = s.Status.Code, s.Status.Message
					for _, l := range s.Links {
						sp.Links = append(sp.Links, struct{ TraceID, SpanID string }{l.TraceID, l.SpanID})
					}
					out = append(out, sp)
				}
			}
		}
	})
	return out
}

// Point is one data point of a metric: its attributes and its value (a
// sum's value, a histogram's count).
type Point struct {
	Attrs map[string]any
	Value float64
	// Sum is a histogram's sum.
	Sum float64
}

// Metric is the points of one metric in one export.
type Metric struct {
	Name, Unit string
	Points     []Point
}

// Metrics returns every metric export received so far.
func (c *Collector) Metrics(t testing.TB) []Metric {
	t.Helper()
	var out []Metric
	c.lines(t, "metrics.json", func(line []byte) {
		type point struct {
			Attributes []keyValue
			AsInt      json.Number `json:"asInt"`
			AsDouble   float64     `json:"asDouble"`
			Count      json.Number
			Sum        float64
		}
		var doc struct {
			ResourceMetrics []struct {
				ScopeMetrics []struct {
					Metrics []struct {
						Name, Unit string
						Sum        struct{ DataPoints []point }
						Histogram  struct{ DataPoints []point }
					}
				}
			}
		}
		if err := json.Unmarshal(line, &doc); err != nil {
			t.Fatalf("collector metrics line: %v\n%s", err, line)
		}
		for _, rm := range doc.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					mt := Metric{Name: m.Name, Unit: m.Unit}
					for _, p := range append(m.Sum.DataPoints, m.Histogram.DataPoints...) {
						v := p.AsDouble
						if p.AsInt != "" {
							v, _ = p.AsInt.Float64()
						}
						if p.Count != "" {
							v, _ = p.Count.Float64()
						}
						mt.Points = append(mt.Points, Point{Attrs: attrs(p.Attributes), Value: v, Sum: p.Sum})
					}
					out = append(out, mt)
				}
			}
		}
	})
	return out
}

// WaitSpans polls the spans received until done says they are complete,
// for at most a minute (the exporter batches, the file exporter flushes
// every 50 ms).
func (c *Collector) WaitSpans(t testing.TB, done func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		spans := c.Spans(t)
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not receive the expected spans within a minute; it has %d:\n%s\ncollector log:\n%s", len(spans), Names(spans), c.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Names lists spans one a line (for failure messages).
func Names(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s span=%s parent=%s attrs=%v\n", s.Name, s.SpanID, s.ParentSpanID, s.Attrs)
	}
	return b.String()
}

func (c *Collector) lines(t testing.TB, file string, fn func([]byte)) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, file))
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		// A line still being written has no end yet; the next poll reads it.
		if line := sc.Bytes(); len(line) > 0 && json.Valid(line) {
			fn(line)
		}
	}
}

type keyValue struct {
	Key   string
	Value struct {
		StringValue *string     `json:"stringValue"`
		IntValue    json.Number `json:"intValue"`
		BoolValue   *bool       `json:"boolValue"`
		DoubleValue *float64    `json:"doubleValue"`
	}
}

func attrs(kvs []keyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		switch v := kv.Value; {
		case v.StringValue != nil:
			m[kv.Key] = *v.StringValue
		case v.IntValue != "":
			n, _ := v.IntValue.Int64()
			m[kv.Key] = n
		case v.BoolValue != nil:
			m[kv.Key] = *v.BoolValue
		case v.DoubleValue != nil:
			m[kv.Key] = *v.DoubleValue
		}
	}
	return m
}
