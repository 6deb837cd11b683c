package otlp

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
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolhost/toolhost/internal/trace"
)

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
func FromEnv(ctx context.Context, o trace.Options) (*trace.Provider, error) {
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
// with the session (trace.Provider.Session), whose identity is part of the
// resource.
func New(e Exporters, o trace.Options) (*trace.Provider, error) {
	if e.Resource == nil {
		e.Resource = resource.Default()
	}
	return trace.NewProvider(&backend{log: o.Log, version: o.ServiceVersion, exp: e}, o), nil
}

// backend is the trace.Backend of the OpenTelemetry SDK: its tracer and
// meter providers over e's exporters, each exporter watched (see watch).
type backend struct {
	log      zerolog.Logger
	version  string
	exp      Exporters
	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	watchers []*watch
	stop     sync.Once
	stopErr  error
}

// Start builds the SDK's providers for the session whose resource
// attributes are res (a signal without an exporter gets a no-op).
func (b *backend) Start(res []attribute.KeyValue) (oteltrace.Tracer, metric.Meter, error) {
	r, err := resource.Merge(b.exp.Resource, resource.NewSchemaless(res...))
	if err != nil {
		return nil, nil, err
	}
	var meter metric.Meter = metricnoop.NewMeterProvider().Meter(trace.ScopeName)
	var tracer oteltrace.Tracer = tracenoop.NewTracerProvider().Tracer(trace.ScopeName)
	if e := b.exp.Spans; e != nil {
		w := b.newWatch("traces", "spans")
		b.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(r), sdktrace.WithSpanProcessor(newBatcher(watchedSpans{e, w}, w.overflow)))
		tracer = b.tp.Tracer(trace.ScopeName, oteltrace.WithInstrumentationVersion(b.version))
	}
	if e := b.exp.Metrics; e != nil {
		w := b.newWatch("metrics", "data points")
		b.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(r), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(watchedMetrics{e, w})))
		meter = b.mp.Meter(trace.ScopeName, metric.WithInstrumentationVersion(b.version))
	}
	return tracer, meter, nil
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

// Shutdown flushes the spans and metrics still queued and stops the
// exporters, within ctx's deadline; while a collector is known to be down
// nothing waits for it. The first call does the work, later ones return
// its error.
func (b *backend) Shutdown(ctx context.Context) error {
	b.stop.Do(func() {
		if b.tp == nil && b.mp == nil {
			// No session started: the exporters are still this
			// backend's own.
			b.stopErr = b.stopExporters(ctx)
			return
		}
		for _, w := range b.watchers {
			w.closing.Store(true)
		}
		var wg sync.WaitGroup
		var terr, merr error
		if b.tp != nil {
			wg.Go(func() { terr = b.tp.Shutdown(ctx) })
		}
		if b.mp != nil {
			wg.Go(func() { merr = b.mp.Shutdown(ctx) })
		}
		wg.Wait()
		for _, w := range b.watchers {
			w.summary()
		}
		b.stopErr = errors.Join(terr, merr)
	})
	return b.stopErr
}

// stopExporters shuts down exporters no SDK provider took over.
func (b *backend) stopExporters(ctx context.Context) error {
	var errs []error
	if b.exp.Spans != nil {
		errs = append(errs, b.exp.Spans.Shutdown(ctx))
	}
	if b.exp.Metrics != nil {
		errs = append(errs, b.exp.Metrics.Shutdown(ctx))
	}
	return errors.Join(errs...)
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

func (b *backend) newWatch(signal, unit string) *watch {
	w := &watch{log: b.log, signal: signal, unit: unit}
	b.watchers = append(b.watchers, w)
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
