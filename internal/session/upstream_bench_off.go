//go:build bench_no_upstream

package session

import "time"

// upstreams of a build with -tags bench_no_upstream (BenchmarkStartCost's
// A/B builds only): no upstream server is started.
type upstreams struct{}

func (s *Session) startUpstreams(Options) {}

// ShuttingDown has no upstream server to stop.
func (s *Session) ShuttingDown(time.Duration) {}
