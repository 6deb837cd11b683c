//go:build !bench_no_upstream

package session

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/upstream"
)

// upstreams is the part of a Session that talks to upstream MCP servers,
// in a file of its own so that BenchmarkStartCost can build toolhost
// without the go-sdk client (-tags bench_no_upstream) and weigh what it
// costs a serve.
type upstreams struct {
	Upstream *upstream.Manager
}

// policyPoll is how often a policy file is checked for changes, which
// re-applies the upstreams and re-announces the tool list.
const policyPoll = time.Second

// startUpstreams starts discovery of the policy's upstream MCP servers
// without waiting for it: initialize and built-in calls are answered at
// once. Only tools/list waits (at most the longest discovery timeout, the
// servers being tried in parallel) for the first attempts, so the first
// list already holds every upstream that answered; an upstream that comes
// later is announced with notifications/tools/list_changed. The policy file
// and the project's pins (.toolhost/pins.json) are then watched: a change
// re-applies the upstreams or re-checks their tools and re-announces the
// tool list.
func (s *Session) startUpstreams(o Options) {
	s.Upstream = upstream.NewManager(upstream.Options{
		Log: o.Log, Registry: s.Engine.Registry, Version: o.Version, OnChange: s.toolsChanged, Procs: s.Procs,
		ProjectDir: s.Files.ProjectDir(),
		Pins:       &upstream.Pins{Door: s.Shared, ProjectDir: s.Files.ProjectDir(), Now: s.Engine.Services.Clock.Now},
		Audit:      s.Engine.AuditEvent,
	})
	cur := s.Policy.Current()
	s.Upstream.Apply(cur)
	s.Server.ToolsReady = func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, upstream.MaxDiscoveryTimeout(s.Policy.Current())+time.Second)
		defer cancel()
		s.Upstream.WaitReady(ctx)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(policyPoll)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if f := s.Policy.Current(); f != cur {
					cur = f
					s.Upstream.Apply(f)
				}
				// An approval (toolhost upstream approve) serves the
				// tools it approved without a restart.
				s.Upstream.RefreshPins()
			}
		}
	}()
	s.closers = append(s.closers, func() error {
		close(stop)
		<-done
		s.Upstream.Close()
		return nil
	})
}

// ShuttingDown tells the session that shutdown began and may take grace:
// its upstream servers are stopped within the same grace as its calls.
func (s *Session) ShuttingDown(grace time.Duration) {
	s.Upstream.ShutdownBy(time.Now().Add(grace))
}
