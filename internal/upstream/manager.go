package upstream

import (
	"cmp"
	"context"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/tool"
)

// DefaultDiscoveryTimeout bounds one discovery attempt of an upstream whose
// entry names no discovery_timeout_ms.
const DefaultDiscoveryTimeout = 2 * time.Second

// States of an upstream.
const (
	StateDiscovering = "discovering"
	StateReady       = "ready"
	StateFailed      = "failed"
)

// Backoff is the wait between failed discovery attempts: Initial, doubling
// up to Max, with some jitter so several toolhost processes do not retry in
// step.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

func (b Backoff) delay(attempt int) time.Duration {
	if b.Initial <= 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 15 * time.Second
	}
	d := b.Initial << min(attempt, 20)
	if d <= 0 || d > b.Max {
		d = b.Max
	}
	return d + rand.N(d/5+1)
}

// Options configure a Manager.
type Options struct {
	Log zerolog.Logger
	// Registry receives each upstream's tools as the source "mcp:<name>".
	Registry *registry.Registry
	// OnChange runs after the registry's set of upstream tools changed.
	OnChange func()
	// Version is the client version toolhost announces to upstreams.
	Version string
	// Backoff between failed discovery attempts (zero: 500 ms up to 15 s).
	Backoff Backoff
	// NoRetry makes a failed discovery final (one-shot listings).
	NoRetry bool
	// Procs starts the processes of stdio upstreams (the session's process
	// owner); nil starts them with procs.Spawn, owned by no session.
	Procs Spawner
}

// Manager runs the upstreams of the policy in force.
type Manager struct {
	opts Options

	mu      sync.Mutex
	policy  *policy.File
	servers map[string]*server
	closed  bool
	wg      sync.WaitGroup
	// pubMu orders publications, so tools built under an older policy
	// never replace ones built under a newer one.
	pubMu sync.Mutex
}

// server is one configured upstream and what is known of it.
type server struct {
	cfg    policy.Upstream
	rank   int
	conn   *conn
	ctx    context.Context
	cancel context.CancelFunc
	first  chan struct{} // closed when the first discovery attempt ended

	// relistMu runs one re-listing at a time after list_changed.
	relistMu sync.Mutex

	mu       sync.Mutex
	state    string
	tools    []*mcp.Tool
	lastErr  string
	attempts int
	skipped  map[string]string // served name → why it is not served
}

// NewManager returns a manager with no upstreams; call Apply.
func NewManager(o Options) *Manager {
	if o.Registry == nil {
		o.Registry = registry.New()
	}
	return &Manager{opts: o, servers: map[string]*server{}}
}

// Apply makes the running upstreams match f: new entries start discovery,
// removed or changed ones are stopped (their tools withdrawn), unchanged ones
// keep their connection. Every upstream's tools are rebuilt under f, since a
// permission change changes a tool's effect. Apply does not wait for
// discovery; see WaitReady.
func (m *Manager) Apply(f *policy.File) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.policy = f
	want := map[string]int{}
	for i, u := range f.Upstream {
		want[u.Name] = i
	}
	var stopped []*server
	for name, s := range m.servers {
		i, ok := want[name]
		if !ok || !reflect.DeepEqual(s.cfg, f.Upstream[i]) {
			stopped = append(stopped, s)
			delete(m.servers, name)
		}
	}
	var started []*server
	for i, u := range f.Upstream {
		if s, ok := m.servers[u.Name]; ok {
			s.rank = i
			continue
		}
		s := &server{cfg: u, rank: i, first: make(chan struct{}), state: StateDiscovering}
		s.conn = newConn(u, m.opts.Log, m.opts.Version, m.spawner(), func() { m.relist(s) })
		s.ctx, s.cancel = context.WithCancel(context.Background())
		m.servers[u.Name] = s
		started = append(started, s)
	}
	m.wg.Add(len(started))
	current := m.list()
	m.mu.Unlock()

	// Withdraw the old tools before a replacement of the same name can
	// publish its own under the same source.
	for _, s := range stopped {
		s.cancel()
		s.conn.close(true)
		m.pubMu.Lock()
		m.opts.Registry.SetSource("mcp:"+s.cfg.Name, s.rank, nil)
		m.pubMu.Unlock()
		m.opts.Log.Info().Str("event", "upstream_removed").Str("upstream", s.cfg.Name).Msg("upstream stopped: removed or changed in the policy")
	}
	for _, s := range started {
		go m.discoverLoop(s)
	}
	for _, s := range current {
		m.publish(s)
	}
	m.changed()
}

// list returns the servers in policy order; the caller holds m.mu.
func (m *Manager) list() []*server {
	return slices.SortedFunc(maps.Values(m.servers), func(a, b *server) int { return cmp.Compare(a.rank, b.rank) })
}

func (m *Manager) changed() {
	if m.opts.OnChange != nil {
		m.opts.OnChange()
	}
}

func discoveryTimeout(u policy.Upstream) time.Duration {
	if u.DiscoveryTimeoutMS > 0 {
		return time.Duration(u.DiscoveryTimeoutMS) * time.Millisecond
	}
	return DefaultDiscoveryTimeout
}

// discoverLoop lists the upstream's tools, retrying with backoff until it
// succeeds or the upstream is stopped.
func (m *Manager) discoverLoop(s *server) {
	defer m.wg.Done()
	log := m.opts.Log.With().Str("upstream", s.cfg.Name).Logger()
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.ctx, discoveryTimeout(s.cfg))
		start := time.Now()
		tools, err := s.conn.listTools(ctx)
		cancel()
		if s.ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.attempts++
		if err == nil {
			s.state, s.tools, s.lastErr = StateReady, tools, ""
		} else {
			s.state, s.lastErr = StateFailed, err.Error()
		}
		s.mu.Unlock()
		if err == nil {
			log.Info().Str("event", "upstream_discovered").Int("tools", len(tools)).
				Dur("elapsed", time.Since(start)).Msg("upstream tools discovered")
			m.publish(s)
			m.changed()
			closeOnce(s.first)
			return
		}
		// A half-started process or session is not kept for the retry.
		s.conn.close(false)
		closeOnce(s.first)
		if m.opts.NoRetry {
			log.Warn().Str("event", "upstream_discovery_failed").Err(err).Msg("upstream discovery failed")
			return
		}
		wait := m.opts.Backoff.delay(attempt)
		log.Warn().Str("event", "upstream_discovery_failed").Err(err).Dur("retry_in", wait).
			Msg("upstream discovery failed; its tools are unavailable until a retry succeeds")
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// relist follows an upstream's notifications/tools/list_changed: its tools
// are listed again and republished. A failure keeps the tools known so far.
func (m *Manager) relist(s *server) {
	s.relistMu.Lock()
	defer s.relistMu.Unlock()
	s.mu.Lock()
	ready := s.state == StateReady
	s.mu.Unlock()
	if !ready || s.ctx.Err() != nil {
		// The discovery loop lists it when it succeeds.
		return
	}
	log := m.opts.Log.With().Str("upstream", s.cfg.Name).Logger()
	ctx, cancel := context.WithTimeout(s.ctx, discoveryTimeout(s.cfg))
	defer cancel()
	tools, err := s.conn.listTools(ctx)
	if err != nil {
		log.Warn().Str("event", "upstream_relist_failed").Err(err).Msg("upstream tool list changed but could not be read; keeping the tools known so far")
		return
	}
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	log.Info().Str("event", "upstream_tools_changed").Int("tools", len(tools)).Msg("upstream tool list changed")
	m.publish(s)
	m.changed()
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// publish puts the server's tools, built under the policy in force, into the
// registry and logs renames and tools left out.
func (m *Manager) publish(s *server) {
	m.pubMu.Lock()
	defer m.pubMu.Unlock()
	m.mu.Lock()
	f, rank := m.policy, s.rank
	live := m.servers[s.cfg.Name] == s
	m.mu.Unlock()
	if !live {
		return
	}
	s.mu.Lock()
	remote := s.tools
	s.mu.Unlock()
	log := m.opts.Log.With().Str("upstream", s.cfg.Name).Logger()
	source := "mcp:" + s.cfg.Name
	var tools []tool.Tool
	skipped := map[string]string{}
	for _, t := range remote {
		name, renamed := ToolName(s.cfg.Name, t.Name)
		rt, err := newRemoteTool(name, s.cfg, s.conn, t, f)
		if err != nil {
			skipped[name] = err.Error()
			continue
		}
		if renamed {
			log.Info().Str("event", "upstream_tool_renamed").Str("tool", t.Name).Str("name", name).
				Msg("upstream tool name does not fit ^[a-zA-Z0-9_-]{1,64}$; served under a shortened name")
		}
		tools = append(tools, rt)
	}
	for _, sk := range m.opts.Registry.SetSource(source, rank, tools) {
		if sk.Source == source {
			skipped[sk.Name] = sk.Reason
		}
	}
	s.mu.Lock()
	old := s.skipped
	s.skipped = skipped
	s.mu.Unlock()
	for name, why := range skipped {
		if old[name] != why {
			log.Warn().Str("event", "upstream_tool_unavailable").Str("tool", name).Str("reason", why).
				Msg("upstream tool not served")
		}
	}
}

// WaitReady waits until every upstream's first discovery attempt ended (each
// is bounded by its own discovery timeout, and they run in parallel) or ctx
// is done.
func (m *Manager) WaitReady(ctx context.Context) {
	m.mu.Lock()
	servers := m.list()
	m.mu.Unlock()
	for _, s := range servers {
		select {
		case <-s.first:
		case <-ctx.Done():
			return
		}
	}
}

// MaxDiscoveryTimeout is the longest discovery timeout among f's upstreams.
func MaxDiscoveryTimeout(f *policy.File) time.Duration {
	var d time.Duration
	for _, u := range f.Upstream {
		d = max(d, discoveryTimeout(u))
	}
	return d
}

// Close stops every upstream (process groups included). Safe to call twice.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	servers := m.list()
	m.servers = map[string]*server{}
	m.mu.Unlock()
	for _, s := range servers {
		s.cancel()
	}
	m.wg.Wait()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.conn.close(true) }()
	}
	wg.Wait()
}

// ToolStatus is one upstream tool as toolhost sees it.
type ToolStatus struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream_name"`
	Served   bool   `json:"served"`
	Reason   string `json:"reason,omitempty"`
}

// Status is the state of one upstream.
type Status struct {
	Name      string       `json:"name"`
	Transport string       `json:"transport"`
	Target    string       `json:"target"`
	State     string       `json:"state"`
	Attempts  int          `json:"attempts"`
	PID       int          `json:"pid,omitempty"`
	LastError string       `json:"last_error,omitempty"`
	Tools     []ToolStatus `json:"tools"`
}

// Status reports every upstream in policy order.
func (m *Manager) Status() []Status {
	m.mu.Lock()
	servers := m.list()
	m.mu.Unlock()
	out := make([]Status, 0, len(servers))
	for _, s := range servers {
		s.mu.Lock()
		st := Status{Name: s.cfg.Name, Transport: s.cfg.Transport, State: s.state, Attempts: s.attempts,
			LastError: s.lastErr, Tools: []ToolStatus{}}
		st.Target = s.cfg.URL
		if s.cfg.Transport == "stdio" {
			st.Target = s.cfg.Command
		}
		for _, t := range s.tools {
			name, _ := ToolName(s.cfg.Name, t.Name)
			why, skipped := s.skipped[name]
			st.Tools = append(st.Tools, ToolStatus{Name: name, Upstream: t.Name, Served: !skipped, Reason: why})
		}
		s.mu.Unlock()
		st.PID = s.conn.pid()
		out = append(out, st)
	}
	return out
}

// spawner is the owner of the upstreams' processes.
func (m *Manager) spawner() Spawner {
	if m.opts.Procs != nil {
		return m.opts.Procs
	}
	return spawnFunc(procs.Spawn)
}

type spawnFunc func(procs.Spec) (*procs.Child, error)

func (f spawnFunc) Spawn(s procs.Spec) (*procs.Child, error) { return f(s) }
