//go:build bench_no_tracing

package cli

import (
	"context"

	"github.com/toolhost/toolhost/internal/trace"
)

// exportersFromEnv of a build with -tags bench_no_tracing
// (BenchmarkStartCost's A/B builds only) exports nothing.
func exportersFromEnv(context.Context, trace.Options) (*trace.Provider, error) { return nil, nil }
