//go:build bench_no_dashboard

package cli

import (
	"errors"
	"io"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/store"
)

// newDashboard of a build with -tags bench_no_dashboard
// (BenchmarkStartCost's A/B builds only) has no dashboard to serve.
func newDashboard(dashboardFlags, io.Writer, zerolog.Logger, store.Store) (dashboardServer, error) {
	return nil, errors.New("built without the dashboard (-tags bench_no_dashboard)")
}
