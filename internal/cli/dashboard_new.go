//go:build !bench_no_dashboard

package cli

import (
	"io"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/dashboard"
	"github.com/toolhost/toolhost/internal/store"
)

// newDashboard is the one import of the dashboard, in a file of its own so
// that BenchmarkStartCost can build toolhost without it
// (-tags bench_no_dashboard) and weigh what it costs a serve.
func newDashboard(f dashboardFlags, out io.Writer, log zerolog.Logger, st store.Store) (dashboardServer, error) {
	return dashboard.New(dashboard.Options{ProjectDir: f.projectDir, AgentsFile: f.agentsFile, PolicyFile: f.policyFile,
		Codes: out, Log: log, Store: st})
}
