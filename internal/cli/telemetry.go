package cli

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/trace"
)

// telemetry starts the OpenTelemetry export the OTEL_* variables ask for
// (nil when they ask for none) and returns the function that flushes what
// is still queued, within grace, when the command ends. It is the one
// place that wires the exporters (trace/otlp) in: everything else sees
// only the span API of package trace. An exporter that
// cannot be set up is logged and the command goes on without telemetry:
// tracing must never keep an agent's tools from being served.
func telemetry(log zerolog.Logger, args bool, grace time.Duration) (*trace.Provider, func()) {
	p, err := exportersFromEnv(context.Background(), trace.Options{Log: log, ServiceVersion: Version, Args: args})
	if err != nil {
		log.Error().Str("event", "otel_disabled").Err(err).Msg("OpenTelemetry export could not be set up from the OTEL_* variables; serving without it")
		return nil, func() {}
	}
	return p, func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			log.Warn().Str("event", "otel_flush_incomplete").Err(err).Msg("OpenTelemetry data still queued at exit was not all sent")
		}
	}
}
