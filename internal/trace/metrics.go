package trace

import (
	"go.opentelemetry.io/otel/metric"
)

// durationBuckets are the bucket boundaries (seconds) the MCP conventions
// give mcp.server.operation.duration.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// instruments are toolhost's metrics.
type instruments struct {
	// operation is mcp.server.operation.duration: every MCP request the
	// server answers, by method (and tool), error.type and revision.
	operation metric.Float64Histogram
	// calls are tool calls by tool and audit status.
	calls metric.Int64Counter
	// rejections are refused tool calls by rejection kind (fault.Kind).
	rejections metric.Int64Counter
	// confirmations are calls that waited for a human, by how it ended.
	confirmations metric.Int64Counter
	// auditFailures are audit rows the sink did not store.
	auditFailures metric.Int64Counter
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var err error
	if in.operation, err = m.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return in, err
	}
	if in.calls, err = m.Int64Counter("toolhost.tool.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls through toolhost's pipeline, by tool and audit status.")); err != nil {
		return in, err
	}
	if in.rejections, err = m.Int64Counter("toolhost.tool.rejections", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls refused before or instead of running, by rejection kind.")); err != nil {
		return in, err
	}
	if in.confirmations, err = m.Int64Counter("toolhost.confirmations", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls that needed a human's confirmation, by outcome (confirmed, or the kind that ended the call).")); err != nil {
		return in, err
	}
	if in.auditFailures, err = m.Int64Counter("toolhost.audit.write_failures", metric.WithUnit("{row}"),
		metric.WithDescription("Audit rows the audit sink failed to store (they went to the log whole).")); err != nil {
		return in, err
	}
	return in, nil
}
