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
	"time"

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

// Provider is toolhost's telemetry for one process, which serves one
// session: its exporters and, from Session on, the SDK's tracer and meter
// providers. A nil *Provider exports nothing; its methods are no-ops.
type Provider struct {
	log     zerolog.Logger
	args    bool
	version string
	exp     Exporters
	// env is the trace context of TRACEPARENT/TRACESTATE in toolhost's
	// environment: the parent of the session's span when set.
	env context.Context

	once     sync.Once
	session  *Session
	tracer   oteltrace.Tracer
	inst     instruments
	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	watchers []*watch
	// spawns are the spans of spawned commands still waiting for their
	// command's exit: Shutdown lets them end before it flushes.
	spawns sync.WaitGroup
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
	var e Exporters
	if traces {
		if e.Spans, err = spanExporter(ctx, protocol(o.Log, "TRACES")); err != nil {
			return nil, err
		}
	}
	if metrics {
		if e.Metrics, err = metricExporter(ctx, protocol(o.Log, "METRICS")); err != nil {
			if e.Spans != nil {
				_ = e.Spans.Shutdown(ctx)
			}
			return nil, err
		}
	}
	e.Resource = res
	return New(e, o)
}

// Exporters are where a Provider sends its data: FromEnv's OTLP exporters,
// or a test's.
type Exporters struct {
	// Spans and Metrics may each be nil (that signal is not exported).
	Spans   sdktrace.SpanExporter
	Metrics sdkmetric.Exporter
	// Resource describes toolhost (service.name …); nil: the SDK's default.
	Resource *resource.Resource
}

// New returns a Provider exporting to e: spans through toolhost's
// batching processor (OTEL_BSP_* apply), metrics through the SDK's periodic
// reader (OTEL_METRIC_EXPORT_INTERVAL applies). The SDK's providers start
// with the session (Session), whose identity is part of the resource.
func New(e Exporters, o Options) (*Provider, error) {
	if e.Resource == nil {
		e.Resource = resource.Default()
	}
	return &Provider{log: o.Log, args: o.Args, version: o.ServiceVersion, exp: e, env: envParent()}, nil
}

// start builds the SDK's providers for the session id: the session is an
// attribute of the resource (service.instance.id, toolhost.agent …), so it
// is sent once per batch, not once per span.
func (p *Provider) start(id Identity) error {
	attrs := []attribute.KeyValue{attribute.String("service.instance.id", id.SessionID), keyAgent.String(id.Agent)}
	if id.ProjectID != "" {
		attrs = append(attrs, keyProject.String(id.ProjectID))
	}
	if id.Unit != "" {
		attrs = append(attrs, keyUnit.String(id.Unit))
	}
	res, err := resource.Merge(p.exp.Resource, resource.NewSchemaless(attrs...))
	if err != nil {
		return err
	}
	var meter metric.Meter = metricnoop.NewMeterProvider().Meter(ScopeName)
	p.tracer = tracenoop.NewTracerProvider().Tracer(ScopeName)
	if e := p.exp.Spans; e != nil {
		w := p.newWatch("traces", "spans")
		p.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(newBatcher(watchedSpans{e, w}, w.overflow)))
		p.tracer = p.tp.Tracer(ScopeName, oteltrace.WithInstrumentationVersion(p.version))
	}
	if e := p.exp.Metrics; e != nil {
		w := p.newWatch("metrics", "data points")
		p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(watchedMetrics{e, w})))
		meter = p.mp.Meter(ScopeName, metric.WithInstrumentationVersion(p.version))
	}
	return p.inst.register(meter)
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
	// A Provider whose session never started still owns its exporters.
	p.once.Do(func() { p.stopExporters(ctx) })
	// A command that exited just now has its span ended by a goroutine
	// that may not have run yet.
	ended := make(chan struct{})
	go func() { p.spawns.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
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

// stopExporters shuts down exporters no SDK provider took over.
func (p *Provider) stopExporters(ctx context.Context) {
	if p.exp.Spans != nil {
		_ = p.exp.Spans.Shutdown(ctx)
	}
	if p.exp.Metrics != nil {
		_ = p.exp.Metrics.Shutdown(ctx)
	}
}

// watch follows one exporter's health: the first failure is logged, the
// following ones only counted until an export succeeds again (logged
// once), so a dead collector costs one log line, not one per batch.
type watch struct {
	log    zerolog.Logger
	signal string
	unit   string

	failing atomic.Bool
	// full is set once the export queue overflowed.
	full atomic.Bool
	// closing is set by Shutdown: while failing, what is still queued is
	// dropped at once instead of waiting for a collector that is down.
	closing atomic.Bool
	mu      sync.Mutex
	dropped int
	lastErr error
	// wait is the current backoff and next when the next try is due.
	wait time.Duration
	next time.Time
}

func (p *Provider) newWatch(signal, unit string) *watch {
	w := &watch{log: p.log, signal: signal, unit: unit}
	p.watchers = append(p.watchers, w)
	return w
}

// overflow counts n spans a full export queue refused; the first time is
// logged.
func (w *watch) overflow(n int) {
	w.mu.Lock()
	w.dropped += n
	w.mu.Unlock()
	if w.full.CompareAndSwap(false, true) && !w.failing.Load() {
		w.log.Warn().Str("event", "otel_queue_full").Str("signal", w.signal).
			Msgf("OpenTelemetry export queue is full (OTEL_BSP_MAX_QUEUE_SIZE); %s are dropped while the collector does not keep up (logged once)", w.unit)
	}
}

// Backoff between export attempts while the collector fails: a batch in
// between is dropped without being encoded, so a dead collector costs
// about what a hanging one does, not a failed encode and dial per batch.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// skip reports whether an export should not even be tried: the collector
// failed and its next try is not due, or it failed and toolhost is
// shutting down (nothing waits for it then).
func (w *watch) skip(n int) bool {
	if !w.failing.Load() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing.Load() || time.Now().Before(w.next) {
		w.dropped += n
		return true
	}
	return false
}

func (w *watch) observe(err error, n int) {
	if err == nil {
		if w.failing.CompareAndSwap(true, false) {
			w.mu.Lock()
			d := w.dropped
			w.dropped, w.wait = 0, 0
			w.mu.Unlock()
			w.log.Info().Str("event", "otel_export_recovered").Str("signal", w.signal).Int("dropped", d).
				Msgf("OpenTelemetry %s export works again; %d %s were dropped while it failed", w.signal, d, w.unit)
		}
		return
	}
	w.mu.Lock()
	w.dropped += n
	w.lastErr = err
	w.wait = min(max(2*w.wait, retryFirst), retryMax)
	w.next = time.Now().Add(w.wait)
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
