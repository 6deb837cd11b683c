package trace

import (
	"context"
	"os"
	"sync"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of toolhost's spans and metrics.
const ScopeName = "github.com/toolhost/toolhost/internal/trace"

// Options configure a Provider.
type Options struct {
	Log zerolog.Logger
	// ServiceVersion is toolhost's version (service.version, and the
	// instrumentation scope's version).
	ServiceVersion string
	// Args puts the redacted arguments and results of tool calls on their
	// spans (gen_ai.tool.call.arguments, gen_ai.tool.call.result): the
	// --trace-args flag.
	Args bool
}

// Backend is where a Provider's spans and metrics go: the OpenTelemetry
// SDK and its exporters, which package trace/otlp sets up from the OTEL_*
// variables. This package reaches them only through the OpenTelemetry API
// (a Tracer and a Meter), so what imports it links no SDK or exporter.
type Backend interface {
	// Start returns the tracer and meter of a session whose identity is
	// res (resource attributes: service.instance.id, toolhost.agent …).
	// It is called at most once.
	Start(res []attribute.KeyValue) (oteltrace.Tracer, metric.Meter, error)
	// Shutdown flushes what is queued and stops the exporters within
	// ctx's deadline, whether Start was called or not; it may be called
	// more than once.
	Shutdown(ctx context.Context) error
}

// Provider is toolhost's telemetry for one process, which serves one
// session: its backend and, from Session on, the session's tracer and
// instruments. A nil *Provider exports nothing; its methods are no-ops.
type Provider struct {
	log  zerolog.Logger
	args bool
	b    Backend
	// env is the trace context of TRACEPARENT/TRACESTATE in toolhost's
	// environment: the parent of the session's span when set.
	env context.Context

	once    sync.Once
	session *Session
	tracer  oteltrace.Tracer
	inst    instruments
	// spawns are the spans of spawned commands still waiting for their
	// command's exit: Shutdown lets them end before it flushes.
	spawns sync.WaitGroup
}

// NewProvider returns a Provider whose spans and metrics go to b.
func NewProvider(b Backend, o Options) *Provider {
	return &Provider{log: o.Log, args: o.Args, b: b, env: envParent()}
}

// Attributes are the resource attributes of a session with identity id:
// service.instance.id is the session, then toolhost.agent,
// toolhost.project.id and toolhost.unit. Being the resource's, they are
// sent once per batch, not once per span.
func (id Identity) Attributes() []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("service.instance.id", id.SessionID), keyAgent.String(id.Agent)}
	if id.ProjectID != "" {
		attrs = append(attrs, keyProject.String(id.ProjectID))
	}
	if id.Unit != "" {
		attrs = append(attrs, keyUnit.String(id.Unit))
	}
	return attrs
}

// start makes the session's tracer and instruments.
func (p *Provider) start(id Identity) error {
	tracer, meter, err := p.b.Start(id.Attributes())
	if err != nil {
		return err
	}
	p.tracer = tracer
	return p.inst.register(meter)
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

// Shutdown lets the spans of commands that just exited end, then flushes
// the spans and metrics still queued and stops the exporters, within ctx's
// deadline. Safe on nil and twice.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	// No session starts after this.
	p.once.Do(func() {})
	// A command that exited just now has its span ended by a goroutine
	// that may not have run yet.
	ended := make(chan struct{})
	go func() { p.spawns.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
	}
	return p.b.Shutdown(ctx)
}
