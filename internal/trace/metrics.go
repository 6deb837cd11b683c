package trace

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// durationBuckets are the bucket boundaries (seconds) the MCP conventions
// give mcp.server.operation.duration.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// instruments are toolhost's metrics. The histogram is recorded per
// request; the counters are asynchronous: a call adds to an atomic counter
// of its series, and the SDK reads them all when it collects (every
// OTEL_METRIC_EXPORT_INTERVAL), which costs a call far less than a
// synchronous counter's Add.
type instruments struct {
	// operation is mcp.server.operation.duration: every MCP request the
	// server answers, by method (and tool), error.type and revision.
	operation metric.Float64Histogram
	ops       options[opKey]
	// calls are tool calls by tool and audit status; rejections refused
	// calls by rejection kind (fault.Kind); confirmations calls that
	// needed a human, by how that ended.
	calls, rejections, confirmations counters
	// auditFailures are audit rows the sink did not store.
	auditFailures atomic.Int64
}

// opKey are the attributes of one mcp.server.operation.duration series.
type opKey struct {
	method, tool, version, errType     string
	network, protocol, protocolVersion string
	// status is set when errType is a JSON-RPC error code (also
	// rpc.response.status_code).
	status bool
}

// append adds k's attributes to attrs.
func (k opKey) append(attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, keyMethod.String(k.method))
	if k.tool != "" {
		attrs = append(attrs, keyToolName.String(k.tool), keyOperation.String(ToolCall))
	}
	if k.version != "" {
		attrs = append(attrs, keyProtocolVersion.String(k.version))
	}
	if k.network != "" {
		attrs = append(attrs, keyTransport.String(k.network))
	}
	if k.protocol != "" {
		attrs = append(attrs, keyNetProtocol.String(k.protocol), keyNetVersion.String(k.protocolVersion))
	}
	if k.errType != "" {
		attrs = append(attrs, keyErrorType.String(k.errType))
		if k.status {
			attrs = append(attrs, keyStatusCode.String(k.errType))
		}
	}
	return attrs
}

// options keeps the attribute option of every series recorded so far:
// building an attribute set sorts and copies, and requests record the same
// few combinations over and over. Their number is bounded by the methods,
// tools and outcomes (a client-chosen tool name never becomes one).
type options[K comparable] struct {
	mu sync.RWMutex
	m  map[K]metric.MeasurementOption
}

func (o *options[K]) get(k K, attrs func() []attribute.KeyValue) metric.MeasurementOption {
	o.mu.RLock()
	opt, ok := o.m[k]
	o.mu.RUnlock()
	if ok {
		return opt
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if opt, ok = o.m[k]; !ok {
		if o.m == nil {
			o.m = map[K]metric.MeasurementOption{}
		}
		opt = metric.WithAttributeSet(attribute.NewSet(attrs()...))
		o.m[k] = opt
	}
	return opt
}

// pair names a counter series: the tool and one other attribute.
type pair struct {
	tool string
	k    attribute.Key
	v    string
}

// counters are the series of one asynchronous counter.
type counters struct {
	mu sync.RWMutex
	m  map[pair]*series
}

type series struct {
	n   atomic.Int64
	opt metric.ObserveOption
}

func (c *counters) add(tool string, k attribute.Key, v string) {
	p := pair{tool, k, v}
	c.mu.RLock()
	s := c.m[p]
	c.mu.RUnlock()
	if s == nil {
		c.mu.Lock()
		if s = c.m[p]; s == nil {
			if c.m == nil {
				c.m = map[pair]*series{}
			}
			s = &series{opt: metric.WithAttributeSet(attribute.NewSet(keyToolName.String(tool), k.String(v)))}
			c.m[p] = s
		}
		c.mu.Unlock()
	}
	s.n.Add(1)
}

func (c *counters) observe(o metric.Int64Observer) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, s := range c.m {
		o.Observe(s.n.Load(), s.opt)
	}
}

func (in *instruments) register(m metric.Meter) error {
	var err error
	if in.operation, err = m.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return err
	}
	for _, c := range []struct {
		name, unit, desc string
		observe          func(metric.Int64Observer)
	}{
		{"toolhost.tool.calls", "{call}", "Tool calls through toolhost's pipeline, by tool and audit status.", in.calls.observe},
		{"toolhost.tool.rejections", "{call}", "Tool calls refused before or instead of running, by rejection kind.", in.rejections.observe},
		{"toolhost.confirmations", "{call}", "Tool calls that needed a human's confirmation, by outcome (confirmed, or the kind that ended the call).", in.confirmations.observe},
		{"toolhost.audit.write_failures", "{row}", "Audit rows the audit sink failed to store (they went to the log whole).", func(o metric.Int64Observer) {
			if n := in.auditFailures.Load(); n > 0 {
				o.Observe(n)
			}
		}},
	} {
		observe := c.observe
		if _, err := m.Int64ObservableCounter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { observe(o); return nil })); err != nil {
			return err
		}
	}
	return nil
}
