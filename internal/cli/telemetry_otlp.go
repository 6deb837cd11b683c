//go:build !bench_no_tracing

package cli

import (
	"context"

	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/trace/otlp"
)

// exportersFromEnv is the one import of the exporters (trace/otlp), in a
// file of its own so that BenchmarkStartCost can build toolhost without
// them (-tags bench_no_tracing) and weigh what they cost a serve.
func exportersFromEnv(ctx context.Context, o trace.Options) (*trace.Provider, error) {
	return otlp.FromEnv(ctx, o)
}
