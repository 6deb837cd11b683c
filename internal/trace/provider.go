package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of toolhost's spans and metrics.
const ScopeName = "github.com/toolhost/toolhost/internal/trace"

// Options configure a Provider.
type Options struct {
	Log zerolog.Logger
	// ServiceVersion is toolhost's version (service.version).
	ServiceVersion string
	// Args puts the redacted arguments and results of tool calls on their
	// spans (gen_ai.tool.call.arguments, gen_ai.tool.call.result): the
	// --trace-args flag.
	Args bool
}

// Provider is toolhost's telemetry for one process: the SDK's tracer and
// meter providers and their OTLP exporters. A nil *Provider exports
// nothing; its methods are no-ops.
type Provider struct {
	log    zerolog.Logger
	args   bool
	tracer oteltrace.Tracer
	inst   instruments
	// env is the trace context of TRACEPARENT/TRACESTATE in toolhost's
	// environment: the parent of every session's span when set.
	env context.Context

	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	watchers []*watch
}

// FromEnv builds the Provider the standard OTEL_* variables ask for, or nil
// when they ask for none: traces are exported when OTEL_TRACES_EXPORTER is
// otlp, or unset while an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; metrics likewise with
// OTEL_METRICS_EXPORTER and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT.
// OTEL_SDK_DISABLED=true turns both off. OTEL_EXPORTER_OTLP_PROTOCOL (and
// its per-signal forms) picks grpc or http/protobuf (the default); the
// exporters, the batch processor, the sampler and the resource read the
// rest of their OTEL_* variables themselves. An exporter name toolhost does
// not ship (console, prometheus, zipkin …) is logged and ignored: the same
// variables often configure the agent CLI that launched toolhost, and its
// telemetry settings must not stop toolhost from serving.
func FromEnv(ctx context.Context, o Options) (*Provider, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	traces := wanted(o.Log, "TRACES")
	metrics := wanted(o.Log, "METRICS")
	if !traces && !metrics {
		return nil, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "toolhost"), attribute.String("service.version", o.ServiceVersion)),
		resource.WithTelemetrySDK(),
		// Last, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
		resource.WithFromEnv(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("OpenTelemetry resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	p := &Provider{log: o.Log, args: o.Args, env: envParent()}
	var tracer oteltrace.Tracer = tracenoop.NewTracerProvider().Tracer(ScopeName)
	var meter metric.Meter = metricnoop.NewMeterProvider().Meter(ScopeName)
	if traces {
		exp, err := spanExporter(ctx, protocol(o.Log, "TRACES"))
		if err != nil {
			return nil, err
		}
		w := p.newWatch("traces", "spans")
		p.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(watchedSpans{exp, w}))
		tracer = p.tp.Tracer(ScopeName, oteltrace.WithInstrumentationVersion(o.ServiceVersion))
	}
	if metrics {
		exp, err := metricExporter(ctx, protocol(o.Log, "METRICS"))
		if err != nil {
			_ = p.Shutdown(ctx)
			return nil, err
		}
		w := p.newWatch("metrics", "data points")
		p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(watchedMetrics{exp, w})))
		meter = p.mp.Meter(ScopeName, metric.WithInstrumentationVersion(o.ServiceVersion))
	}
	p.tracer = tracer
	if p.inst, err = newInstruments(meter); err != nil {
		_ = p.Shutdown(ctx)
		return nil, err
	}
	return p, nil
}

// wanted reports whether the OTEL_* variables ask for OTLP export of a
// signal (TRACES or METRICS).
func wanted(log zerolog.Logger, signal string) bool {
	names := strings.TrimSpace(os.Getenv("OTEL_" + signal + "_EXPORTER"))
	if names == "" {
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
	}
	otlp := false
	for n := range strings.SplitSeq(names, ",") {
		switch n = strings.TrimSpace(n); n {
		case "otlp":
			otlp = true
		case "none", "":
		default:
			log.Warn().Str("event", "otel_exporter_ignored").Str("variable", "OTEL_"+signal+"_EXPORTER").Str("exporter", n).
				Msg("toolhost exports OpenTelemetry data over OTLP only (otlp or none); this exporter is ignored")
		}
	}
	return otlp
}

// protocol is the OTLP protocol of a signal: its own variable, else
// OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf (the specification's
// default). The HTTP exporters read http/json themselves; a protocol
// nobody speaks is logged and falls back to http/protobuf.
func protocol(log zerolog.Logger, signal string) string {
	v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"))
	if v == "" {
		v = strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	if !slices.Contains([]string{"", "grpc", "http/protobuf", "http/json"}, v) {
		log.Warn().Str("event", "otel_protocol_unsupported").Str("signal", strings.ToLower(signal)).Str("protocol", v).
			Msg("OTLP protocol not supported (grpc, http/protobuf or http/json); using http/protobuf")
	}
	return v
}

func spanExporter(ctx context.Context, proto string) (sdktrace.SpanExporter, error) {
	if proto == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

func metricExporter(ctx context.Context, proto string) (sdkmetric.Exporter, error) {
	if proto == "grpc" {
		return otlpmetricgrpc.New(ctx)
	}
	return otlpmetrichttp.New(ctx)
}

// envParent is the trace context TRACEPARENT (and TRACESTATE) in toolhost's
// environment name, or nil.
func envParent() context.Context {
	tp := os.Getenv("TRACEPARENT")
	if tp == "" {
		return nil
	}
	sc := parse(tp, os.Getenv("TRACESTATE"))
	if !sc.IsValid() {
		return nil
	}
	return oteltrace.ContextWithRemoteSpanContext(context.Background(), sc)
}

// Shutdown flushes the spans and metrics still queued and stops the
// exporters, within ctx's deadline; while a collector is known to be down
// nothing waits for it. Safe on nil and twice.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	for _, w := range p.watchers {
		w.closing.Store(true)
	}
	var wg sync.WaitGroup
	var terr, merr error
	if p.tp != nil {
		wg.Go(func() { terr = p.tp.Shutdown(ctx) })
	}
	if p.mp != nil {
		wg.Go(func() { merr = p.mp.Shutdown(ctx) })
	}
	wg.Wait()
	for _, w := range p.watchers {
		w.summary()
	}
	return errors.Join(terr, merr)
}

// watch follows one exporter's health: the first failure is logged, the
// following ones only counted until an export succeeds again (logged
// once), so a dead collector costs one log line, not one per batch.
type watch struct {
	log    zerolog.Logger
	signal string
	unit   string

	failing atomic.Bool
	// closing is set by Shutdown: while failing, what is still queued is
	// dropped at once instead of waiting for a collector that is down.
	closing atomic.Bool
	mu      sync.Mutex
	dropped int
	lastErr error
}

func (p *Provider) newWatch(signal, unit string) *watch {
	w := &watch{log: p.log, signal: signal, unit: unit}
	p.watchers = append(p.watchers, w)
	return w
}

// skip reports whether an export should not even be tried.
func (w *watch) skip(n int) bool {
	if w.closing.Load() && w.failing.Load() {
		w.mu.Lock()
		w.dropped += n
		w.mu.Unlock()
		return true
	}
	return false
}

func (w *watch) observe(err error, n int) {
	if err == nil {
		if w.failing.CompareAndSwap(true, false) {
			w.mu.Lock()
			d := w.dropped
			w.dropped = 0
			w.mu.Unlock()
			w.log.Info().Str("event", "otel_export_recovered").Str("signal", w.signal).Int("dropped", d).
				Msgf("OpenTelemetry %s export works again; %d %s were dropped while it failed", w.signal, d, w.unit)
		}
		return
	}
	w.mu.Lock()
	w.dropped += n
	w.lastErr = err
	w.mu.Unlock()
	if w.failing.CompareAndSwap(false, true) {
		w.log.Warn().Str("event", "otel_export_failed").Str("signal", w.signal).Err(err).
			Msgf("OpenTelemetry %s export failed; calls are not affected, %s are dropped until the collector answers (logged once)", w.signal, w.unit)
	}
}

// summary logs, at shutdown, what a collector that never came back cost.
func (w *watch) summary() {
	if !w.failing.Load() {
		return
	}
	w.mu.Lock()
	d, err := w.dropped, w.lastErr
	w.mu.Unlock()
	w.log.Warn().Str("event", "otel_export_dropped").Str("signal", w.signal).Int("dropped", d).AnErr("last_error", err).
		Msgf("OpenTelemetry %s export was failing at shutdown; %d %s were dropped", w.signal, d, w.unit)
}

// watchedSpans reports export errors to its watch and not to the SDK, whose
// default handler would print every failed batch.
type watchedSpans struct {
	sdktrace.SpanExporter
	w *watch
}

func (e watchedSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.w.skip(len(spans)) {
		return nil
	}
	e.w.observe(e.SpanExporter.ExportSpans(ctx, spans), len(spans))
	return nil
}

type watchedMetrics struct {
	sdkmetric.Exporter
	w *watch
}

func (e watchedMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	n := 0
	for _, sm := range rm.ScopeMetrics {
		n += len(sm.Metrics)
	}
	if e.w.skip(n) {
		return nil
	}
	e.w.observe(e.Exporter.Export(ctx, rm), n)
	return nil
}
