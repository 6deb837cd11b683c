package dashboard

import (
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/procs"
)

// Bounds of the state kept: what the page shows, not what the stores hold.
const (
	auditShown    = 500
	timelineShown = 300
	// windowCalls are the calls of the last hour kept for the figures.
	windowCalls = 100_000
	window      = time.Hour
)

// ring keeps the newest n values.
type ring[T any] struct {
	buf  []T
	head int // index of the oldest once full
	n    int
}

func newRing[T any](n int) ring[T] { return ring[T]{n: n} }

func (r *ring[T]) push(v T) {
	if len(r.buf) < r.n {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.head] = v
	r.head = (r.head + 1) % r.n
}

func (r *ring[T]) len() int { return len(r.buf) }

// newestFirst calls fn from the newest value on until it returns false.
func (r *ring[T]) newestFirst(fn func(T) bool) {
	for i := len(r.buf) - 1; i >= 0; i-- {
		if !fn(r.buf[(r.head+i)%len(r.buf)]) {
			return
		}
	}
}

// slice is the values, newest first.
func (r *ring[T]) slice() []T {
	out := make([]T, 0, len(r.buf))
	r.newestFirst(func(v T) bool { out = append(out, v); return true })
	return out
}

// call is what the figures need of a call.
type call struct {
	ts       time.Time
	agent    string
	tool     string
	status   audit.Status
	duration float64
}

// state is what the dashboard knows; guarded by hub.mu.
type state struct {
	cards    []*Card
	byShort  map[string]*Card
	audit    ring[AuditRow]
	calls    ring[call]
	timeline ring[TimelineEntry]
	// sessions by id, of every agent; the cards hold copies.
	sessions  map[string]*sessionInfo
	approvals Approvals
	board     Board
	docs      []Doc
	stats     Stats
	// dirty: a call arrived since the figures were sent.
	dirty bool
}

type sessionInfo struct {
	agent string
	// boot is the boot id of the machine the server runs on ("": a server
	// from before the id was announced, which ran on this machine).
	boot string
	Serve
}

// thisBoot is this machine's boot id, read once.
var thisBoot = sync.OnceValue(procs.BootID)

// here reports whether the server runs on this machine (in this boot), so
// that its pid can be checked: a pid of another machine means nothing here.
func (si *sessionInfo) here() bool { return si.boot == "" || si.boot == thisBoot() }

func (s *state) init(d *Dashboard) {
	s.byShort = map[string]*Card{}
	s.audit = newRing[AuditRow](auditShown)
	s.calls = newRing[call](windowCalls)
	s.timeline = newRing[TimelineEntry](timelineShown)
	s.sessions = map[string]*sessionInfo{}
	s.approvals = Approvals{Pending: []Approval{}, Recent: []Approval{}}
	s.board = Board{Columns: []Column{}}
	s.docs = []Doc{}
	pol := d.policy.Current()
	specs := d.reg.Specs()
	for _, ag := range d.agents.List {
		c := &Card{Name: ag.Name, Short: ag.Short, Model: ag.CLI.Model, Loop: ag.Loop, Tools: []string{}, Serving: []Serve{}}
		offered, hidden := pol.Offered(ag, specs)
		for _, s := range offered {
			c.Tools = append(c.Tools, s.Name)
		}
		c.Hidden = len(hidden)
		sort.Strings(c.Tools)
		s.cards = append(s.cards, c)
		s.byShort[ag.Short] = c
	}
	s.stats = Stats{Tools: []audit.ToolStats{}, Agents: map[string]AgentStats{}}
}

// addCall records a call: the stream, its agent's last call, the window.
// newest is false while the trail is read backwards at start.
func (s *state) addCall(r AuditRow, newest bool) {
	if newest {
		s.audit.push(r)
		s.calls.push(call{ts: r.TS, agent: r.Agent, tool: r.Tool, status: r.Status, duration: r.DurationMS})
	}
	if c := s.byShort[r.Agent]; c != nil && !notACall(r.Status) && (c.LastCall == nil || !r.TS.Before(c.LastCall.TS)) {
		c.LastCall = &LastCall{TS: r.TS, Tool: r.Tool, Status: r.Status, ErrorKind: r.ErrorKind, DurationMS: r.DurationMS}
	}
	s.dirty = true
}

// computeStats builds the figures of the window ending at now.
func (s *state) computeStats(now time.Time) Stats {
	since := now.Add(-window)
	st := Stats{Since: since, Agents: map[string]AgentStats{}}
	var b audit.StatsBuilder
	n := 0
	s.calls.newestFirst(func(c call) bool {
		if c.ts.Before(since) {
			return false
		}
		n++
		if notACall(c.status) {
			return true
		}
		b.Add(c.tool, c.status, c.duration)
		a := st.Agents[c.agent]
		a.Calls++
		st.Calls++
		switch c.status {
		case audit.StatusRejected:
			a.Refusals++
			st.Refusals++
		case audit.StatusTimeout, audit.StatusCancelled, audit.StatusError:
			a.Failures++
			st.Failures++
		}
		st.Agents[c.agent] = a
		return true
	})
	st.Capped = n == s.calls.len() && s.calls.len() == windowCalls
	st.Tools = b.Result()
	if st.Tools == nil {
		st.Tools = []audit.ToolStats{}
	}
	return st
}

// card returns a copy of an agent's card for sending, with its servers.
func (s *state) cardView(c *Card) *Card {
	cp := *c
	cp.Serving, cp.Last = []Serve{}, nil
	var ids []string
	for id, si := range s.sessions {
		if si.agent == c.Short {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		si := s.sessions[id]
		if si.State == serveRunning {
			cp.Serving = append(cp.Serving, si.Serve)
			continue
		}
		if cp.Last == nil || si.StartedAt.After(cp.Last.StartedAt) {
			last := si.Serve
			cp.Last = &last
		}
	}
	return &cp
}

// pruneSessions keeps every running server and the newest other one of
// each agent (what the cards show), so the map does not grow with every
// server a long project starts.
func (s *state) pruneSessions() {
	newest := map[string]*sessionInfo{}
	for _, si := range s.sessions {
		if si.State == serveRunning {
			continue
		}
		if n := newest[si.agent]; n == nil || si.StartedAt.After(n.StartedAt) {
			newest[si.agent] = si
		}
	}
	for id, si := range s.sessions {
		if si.State != serveRunning && newest[si.agent] != si {
			delete(s.sessions, id)
		}
	}
}

func (s *state) snapshot(project string, now time.Time) Snapshot {
	snap := Snapshot{
		Project: project, Now: now, Audit: s.audit.slice(), Timeline: s.timeline.slice(), Stats: s.stats,
		Approvals: s.approvals, Bugs: s.board, Docs: s.docs,
	}
	for _, c := range s.cards {
		snap.Agents = append(snap.Agents, s.cardView(c))
	}
	return snap
}

// same reports whether two views are equal, so unchanged state is not
// sent again.
func same(a, b any) bool { return reflect.DeepEqual(a, b) }
