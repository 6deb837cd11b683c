package upstream

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/tool"
)

// DefaultDiscoveryTimeout bounds one discovery attempt of an upstream whose
// entry names no discovery_timeout_ms.
const DefaultDiscoveryTimeout = 2 * time.Second

// DefaultMaxFailures is how many consecutive failures make toolhost restart
// an upstream whose entry names no max_failures.
const DefaultMaxFailures = 2

// DefaultPingInterval is how often an idle stdio upstream is probed when
// its entry names no ping_interval_ms.
const DefaultPingInterval = 15 * time.Second

// States of an upstream.
const (
	StateDiscovering = "discovering"
	StateReady       = "ready"
	StateFailed      = "failed"
	// StateRestarting: killed after consecutive failures and started
	// again with backoff; its tools are withheld until it answers.
	StateRestarting = "restarting"
)

// Backoff is the wait between failed discovery attempts (and before a
// restart): Initial, doubling up to Max, with some jitter so several
// toolhost processes do not retry in step.
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
	// NoRetry makes a failed discovery final (one-shot listings); such a
	// manager never probes or restarts an upstream.
	NoRetry bool
	// Procs starts the processes of stdio upstreams (the session's process
	// owner); nil starts them with procs.Spawn, owned by no session.
	Procs Spawner
	// ProjectDir is what the relative paths of an upstream's sandbox are
	// relative to ("": the current directory).
	ProjectDir string
	// Pins checks every discovered tool against the project's pinned
	// definitions; nil serves the tools unpinned.
	Pins *Pins
	// Audit stores the rows of tools pinned and withheld (the session's
	// engine fills in who); nil keeps no rows.
	Audit func(*audit.Row)
}

// Manager runs the upstreams of the policy in force.
type Manager struct {
	opts Options

	mu      sync.Mutex
	policy  *policy.File
	servers map[string]*server
	closed  bool
	// deadline bounds the stop of every upstream at Close (ShutdownBy).
	deadline time.Time
	pinsSum  [32]byte
	wg       sync.WaitGroup
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
	// pinMu orders the pin checks of the server's tool lists; audited (the
	// hash of the last withhold audited, by upstream tool name) is its.
	pinMu   sync.Mutex
	audited map[string]string

	mu       sync.Mutex
	state    string
	tools    []*mcp.Tool
	withheld map[string]*tool.Withheld // by upstream tool name: held back by the pins
	lastErr  string
	attempts int
	skipped  map[string]string // served name → why the registry does not serve it
	failures int               // consecutive
	restarts int               // since the last answer
	down     string            // while restarting: why its tools are unavailable
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
		s := &server{cfg: u, rank: i, first: make(chan struct{}), state: StateDiscovering, audited: map[string]string{}}
		s.conn = newConn(u, m.opts.Log, m.opts.Version, m.opts.ProjectDir, m.spawner(), hooks{
			listChanged: func() { m.relist(s) },
			failed:      func(why string, err error) { m.failed(s, why, err) },
			answered:    func() { m.answered(s) },
		})
		s.ctx, s.cancel = context.WithCancel(context.Background())
		m.servers[u.Name] = s
		started = append(started, s)
	}
	for _, s := range started {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.discoverLoop(s, 0) }()
		if u := s.cfg; u.Transport == "stdio" && !m.opts.NoRetry {
			m.wg.Add(1)
			go m.probeLoop(s)
		}
	}
	current := m.list()
	m.mu.Unlock()

	// Withdraw the old tools before a replacement of the same name can
	// publish its own under the same source.
	for _, s := range stopped {
		s.cancel()
		s.conn.close(true, time.Now().Add(exitWait+stopGrace))
		m.pubMu.Lock()
		m.opts.Registry.SetSource("mcp:"+s.cfg.Name, s.rank, nil)
		m.pubMu.Unlock()
		m.opts.Log.Info().Str("event", "upstream_removed").Str("upstream", s.cfg.Name).Msg("upstream stopped: removed or changed in the policy")
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

// live reports whether s is still one of the running upstreams.
func (m *Manager) live(s *server) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.closed && m.servers[s.cfg.Name] == s
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

func maxFailures(u policy.Upstream) int {
	if u.MaxFailures > 0 {
		return u.MaxFailures
	}
	return DefaultMaxFailures
}

func pingInterval(u policy.Upstream) time.Duration {
	if u.PingIntervalMS > 0 {
		return time.Duration(u.PingIntervalMS) * time.Millisecond
	}
	return DefaultPingInterval
}

// pingTimeout is how long a probe waits for its answer: the interval,
// within 1 to 5 s (a server that answers at all answers a ping at once).
func pingTimeout(every time.Duration) time.Duration {
	return min(max(every, time.Second), 5*time.Second)
}

// discoverLoop lists the upstream's tools, retrying with backoff until it
// succeeds or the upstream is stopped; attempt is where its backoff starts.
func (m *Manager) discoverLoop(s *server, attempt int) {
	log := m.opts.Log.With().Str("upstream", s.cfg.Name).Logger()
	for ; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.ctx, discoveryTimeout(s.cfg))
		start := time.Now()
		tools, err := s.conn.listTools(ctx)
		cancel()
		if s.ctx.Err() != nil {
			return
		}
		if err == nil {
			m.setTools(s, tools)
		}
		s.mu.Lock()
		s.attempts++
		if err == nil {
			s.state, s.lastErr, s.down, s.failures = StateReady, "", "", 0
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
		s.conn.reset()
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
	m.setTools(s, tools)
	log.Info().Str("event", "upstream_tools_changed").Int("tools", len(tools)).Msg("upstream tool list changed")
	m.publish(s)
	m.changed()
}

// failed counts a failure of a ready upstream (a call timeout, a lost
// connection, a failed probe). The maxFailures-th in a row kills it with
// its process group and starts it again after a backoff; its tools are
// withheld meanwhile, with a reason in toolhost's words (why): the error
// behind it (a dial error names addresses, a transport error anything) goes
// to the log and the operator's status, never to the model.
func (m *Manager) failed(s *server, why string, err error) {
	if m.opts.NoRetry || !m.live(s) {
		return
	}
	log := m.opts.Log.With().Str("upstream", s.cfg.Name).Logger()
	s.mu.Lock()
	if s.state != StateReady {
		s.mu.Unlock()
		return
	}
	s.failures++
	n, limit := s.failures, maxFailures(s.cfg)
	if n < limit {
		s.mu.Unlock()
		log.Warn().Str("event", "upstream_unhealthy").Int("failures", n).Int("max_failures", limit).Str("why", why).AnErr("error", err).
			Msg("upstream failed; it is restarted after max_failures in a row")
		return
	}
	attempt := s.restarts
	s.state, s.failures, s.lastErr = StateRestarting, 0, why
	if err != nil {
		s.lastErr = why + ": " + err.Error()
	}
	s.restarts++
	s.down = fmt.Sprintf("upstream %s is being restarted after %d failures in a row (the last: %s); nothing was sent to it. Its tools come back once it answers again: call again in a few seconds",
		s.cfg.Name, n, why)
	down := s.down
	s.mu.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	log.Warn().Str("event", "upstream_restarting").Int("failures", n).Str("why", why).AnErr("error", err).Int("restart", attempt+1).
		Msg("upstream killed after consecutive failures; starting it again")
	// No call reaches it until the backoff is over (down is what a call is
	// told); the wedged session dies with its group.
	s.conn.suspend(down)
	m.publish(s)
	m.changed()
	go m.restart(s, attempt)
}

// restart kills an upstream with its process group and starts it again
// after the backoff of its attempt-th restart in a row.
func (m *Manager) restart(s *server, attempt int) {
	defer m.wg.Done()
	s.conn.reset()
	select {
	case <-s.ctx.Done():
		return
	case <-time.After(m.opts.Backoff.delay(attempt)):
	}
	s.conn.resume()
	m.discoverLoop(s, attempt+1)
}

// answered resets the failure count: the upstream answered.
func (m *Manager) answered(s *server) {
	s.mu.Lock()
	s.failures, s.restarts = 0, 0
	s.mu.Unlock()
}

// probeLoop pings an idle stdio upstream every ping interval; a probe not
// answered counts as a failure.
func (m *Manager) probeLoop(s *server) {
	defer m.wg.Done()
	every := pingInterval(s.cfg)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		ready := s.state == StateReady
		s.mu.Unlock()
		if !ready {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, pingTimeout(every))
		s.conn.probe(ctx, every)
		cancel()
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// setTools stores a discovery's tools with what the pins say of them.
func (m *Manager) setTools(s *server, tools []*mcp.Tool) {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	withheld := m.checkPins(s, tools)
	s.mu.Lock()
	s.tools, s.withheld = tools, withheld
	s.mu.Unlock()
}

// checkPins returns the tools the project's pins hold back, by upstream
// name, and audits what is new: a tool pinned, a definition withheld (once
// per definition). A store that cannot be read holds back every tool.
// The caller holds s.pinMu.
func (m *Manager) checkPins(s *server, tools []*mcp.Tool) map[string]*tool.Withheld {
	p := m.opts.Pins
	if p == nil {
		return nil
	}
	log := m.opts.Log.With().Str("upstream", s.cfg.Name).Logger()
	out := map[string]*tool.Withheld{}
	defs := make([]Def, 0, len(tools))
	for _, t := range tools {
		served, _ := ToolName(s.cfg.Name, t.Name)
		d, err := DefOf(t)
		if err != nil {
			out[t.Name] = &tool.Withheld{Kind: fault.Pin, Reason: fmt.Sprintf("upstream tool %s is withheld: its definition cannot be encoded to be pinned", served)}
			log.Error().Str("event", "upstream_pin_failed").Str("tool", served).Err(err).Msg("upstream tool definition cannot be pinned; withheld")
			continue
		}
		defs = append(defs, d)
	}
	verdicts, err := p.Check(s.cfg.Name, defs, s.cfg.Pin == policy.PinTrustNew)
	if err != nil {
		log.Error().Str("event", "upstream_pins_unusable").Err(err).Msg("pinned upstream tool definitions cannot be checked; every tool of the upstream is withheld")
		for _, d := range defs {
			served, _ := ToolName(s.cfg.Name, d.Tool)
			w := &tool.Withheld{Kind: fault.Pin, Reason: fmt.Sprintf("upstream tool %s is withheld: its definition cannot be checked against the project's pins (%s): %s",
				served, PinsPath, fault.Explain(err))}
			out[d.Tool] = w
			if s.audited[d.Tool] != d.Hash {
				s.audited[d.Tool] = d.Hash
				m.auditPin(s, served, w.Reason, fault.Pin, &audit.PinNote{Action: audit.PinWithheld, Hash: d.Hash, Change: "pins unreadable"})
			}
		}
		return out
	}
	for _, v := range verdicts {
		served, _ := ToolName(s.cfg.Name, v.Tool)
		switch {
		case v.NewPin != "":
			log.Info().Str("event", "upstream_tool_pinned").Str("tool", served).Str("hash", v.Hash).Str("how", v.NewPin).Msg("upstream tool definition pinned")
			m.auditPin(s, served, fmt.Sprintf("definition of %s pinned (%s)", served, v.NewPin), fault.None,
				&audit.PinNote{Action: audit.PinPinned, Hash: v.Hash})
		case v.Withheld:
			w := &tool.Withheld{Kind: fault.Pin, Reason: m.withheldReason(s, served, v)}
			out[v.Tool] = w
			if s.audited[v.Tool] != v.Hash {
				s.audited[v.Tool] = v.Hash
				log.Warn().Str("event", "upstream_tool_withheld").Str("tool", served).Str("hash", v.Hash).Str("pinned", v.Pinned).
					Str("change", v.Change).Msg("upstream tool withheld: its definition is not the pinned one")
				m.auditPin(s, served, w.Reason, fault.Pin,
					&audit.PinNote{Action: audit.PinWithheld, Hash: v.Hash, Pinned: v.Pinned, Change: v.Change})
			}
		}
		if !v.Withheld {
			delete(s.audited, v.Tool)
		}
	}
	return out
}

// withheldReason is what the model reads of a withheld tool: what changed
// and the command that approves it.
func (m *Manager) withheldReason(s *server, served string, v Verdict) string {
	approve := "toolhost upstream approve " + served
	if dir := m.opts.Pins.ProjectDir; dir != "" {
		approve += " --project-dir " + dir
	}
	if v.Pinned == "" {
		return fmt.Sprintf("upstream tool %s is withheld: server %s offered it after its tools were pinned, so it was never approved. Nothing was sent to the server; a human must review it and approve it with: %s",
			served, s.cfg.Name, approve)
	}
	return fmt.Sprintf("upstream tool %s is withheld: its definition changed since it was pinned (%s changed). Nothing was sent to the server; a human must review the change and approve it with: %s",
		served, v.Change, approve)
}

func (m *Manager) auditPin(s *server, served, msg string, kind fault.Kind, note *audit.PinNote) {
	if m.opts.Audit == nil {
		return
	}
	m.opts.Audit(&audit.Row{Tool: served, Source: "mcp:" + s.cfg.Name, Status: audit.StatusPin,
		ErrorKind: kind.String(), Error: msg, Pin: note})
}

// RefreshPins checks every upstream's tools against the pins again when
// the pin file changed since the last look (an approval, another session's
// pin); clients are told when the list changed.
func (m *Manager) RefreshPins() {
	p := m.opts.Pins
	if p == nil {
		return
	}
	m.mu.Lock()
	servers := m.list()
	m.mu.Unlock()
	if len(servers) == 0 {
		return
	}
	sum := p.Sum()
	m.mu.Lock()
	same := sum == m.pinsSum
	m.pinsSum = sum
	m.mu.Unlock()
	if same {
		return
	}
	for _, s := range servers {
		s.relistMu.Lock()
		s.mu.Lock()
		tools, ready := s.tools, s.state == StateReady
		s.mu.Unlock()
		if ready {
			m.setTools(s, tools)
			m.publish(s)
		}
		s.relistMu.Unlock()
	}
	m.changed()
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
	remote, withheld, down := s.tools, s.withheld, s.down
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
		switch w := withheld[t.Name]; {
		case down != "":
			rt.spec.Withheld = &tool.Withheld{Kind: fault.Unavailable, Reason: down}
		case w != nil:
			rt.spec.Withheld = w
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

// ShutdownBy sets the time by which Close must have stopped every upstream
// (the session's shutdown grace, from when shutdown began); the earliest
// wins. Close never gives an upstream more than exitWait + stopGrace.
func (m *Manager) ShutdownBy(deadline time.Time) {
	m.mu.Lock()
	if m.deadline.IsZero() || deadline.Before(m.deadline) {
		m.deadline = deadline
	}
	m.mu.Unlock()
}

// Close stops every upstream (process groups included), all of them by the
// ShutdownBy deadline: stdin closed first, SIGTERM and SIGKILL for what is
// still running. Safe to call twice.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	servers := m.list()
	m.servers = map[string]*server{}
	deadline := time.Now().Add(exitWait + stopGrace)
	if !m.deadline.IsZero() && m.deadline.Before(deadline) {
		deadline = m.deadline
	}
	m.mu.Unlock()
	for _, s := range servers {
		s.cancel()
	}
	m.wg.Wait()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.conn.close(true, deadline) }()
	}
	wg.Wait()
}

// ToolStatus is one upstream tool as toolhost sees it.
type ToolStatus struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream_name"`
	Served   bool   `json:"served"`
	Reason   string `json:"reason,omitempty"`
	// Withheld is set when the tool is held back by its pin or while its
	// server restarts (the kind: "pin", "unavailable"); Reason says why.
	Withheld string `json:"withheld,omitempty"`
}

// Status is the state of one upstream.
type Status struct {
	Name      string       `json:"name"`
	Transport string       `json:"transport"`
	Target    string       `json:"target"`
	State     string       `json:"state"`
	Attempts  int          `json:"attempts"`
	Failures  int          `json:"failures,omitempty"`
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
			Failures: s.failures, LastError: s.lastErr, Tools: []ToolStatus{}}
		st.Target = s.cfg.URL
		if s.cfg.Transport == "stdio" {
			st.Target = s.cfg.Command
		}
		for _, t := range s.tools {
			name, _ := ToolName(s.cfg.Name, t.Name)
			why, skipped := s.skipped[name]
			ts := ToolStatus{Name: name, Upstream: t.Name, Served: !skipped, Reason: why}
			switch w := s.withheld[t.Name]; {
			case skipped:
			case s.down != "":
				ts.Served, ts.Withheld, ts.Reason = false, fault.Unavailable.String(), s.down
			case w != nil:
				ts.Served, ts.Withheld, ts.Reason = false, w.Kind.String(), w.Reason
			}
			st.Tools = append(st.Tools, ts)
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
