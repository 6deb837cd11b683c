package dashboard

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/store"
)

const (
	maxBugsShown  = 50 // per column of the board
	recentShown   = 20 // decided confirmations
	docsEvery     = 2 * time.Second
	maxDocsShown  = 100
	maxStepText   = 300
	maxRuntimeMsg = 1000
)

// poller keeps the view of the store and the project's files current and
// sends what changed. All its methods run under hub.mu.
type poller struct {
	d      *Dashboard
	stamps map[string]stamp

	pendingRows     []AuditRow
	skipped         int
	pendingTimeline []TimelineEntry
	dirtyCards      map[string]bool
	sent            map[string]*Card // last card sent per agent

	entries []*confirm.Entry
	diffs   map[string]*Diff
	docsAt  time.Time
}

func newPoller(d *Dashboard) *poller {
	return &poller{d: d, stamps: map[string]stamp{}, dirtyCards: map[string]bool{}, sent: map[string]*Card{}, diffs: map[string]*Diff{}}
}

// fileChanged reports whether the project file rel (not a store: the
// triager's summary) differs from when it was last read, and remembers it
// as read.
func (p *poller) fileChanged(rel string) bool {
	st := p.d.stampOf(rel)
	old, seen := p.stamps[rel]
	p.stamps[rel] = st
	return !seen || old != st
}

func (p *poller) pollLocked(first bool) {
	st := &p.d.st
	if first {
		for _, c := range st.cards {
			p.loadCard(c)
			p.dirtyCards[c.Short] = true
		}
		p.loadConfirmations()
		p.approvalsChanged()
	}
	if p.fileChanged(bugs.TriageSummaryPath) || first {
		p.loadBoard()
	}
	if now := time.Now(); first || now.Sub(p.docsAt) >= docsEvery {
		p.docsAt = now
		if docs := p.d.docs(); !same(docs, st.docs) {
			st.docs = docs
			p.d.hub.publishLocked("docs", docs)
		}
	}
}

// changed reloads what the store says changed.
func (p *poller) changed(c store.Change) {
	switch c.What {
	case store.ChangedAgent:
		if card := p.d.st.byShort[shortAgent(c.Agent)]; card != nil {
			p.loadCard(card)
			p.dirtyCards[card.Short] = true
		}
	case store.ChangedConfirmations:
		p.loadConfirmations()
		p.approvalsChanged()
	case store.ChangedBugs:
		p.loadBoard()
	}
}

// event applies what an event says: a server started or ended, or a state
// that changed (read now rather than when the store's watch reports it).
func (p *poller) event(e store.Event) {
	st := &p.d.st
	switch {
	case e.Kind == store.EventSessionStart || e.Kind == store.EventSessionEnd:
		si := sessionOf(e)
		if old := st.sessions[e.Session]; old != nil && e.Kind == store.EventSessionEnd {
			old.State, old.EndedAt = si.State, si.EndedAt
			si = old
		}
		st.sessions[e.Session] = si
		p.dirtyCards[si.agent] = true
	case strings.HasPrefix(e.Kind, "agent."):
		p.changed(store.Change{What: store.ChangedAgent, Agent: e.Agent})
	case strings.HasPrefix(e.Kind, "bug."):
		p.changed(store.Change{What: store.ChangedBugs})
	}
}

// flushLocked sends the calls and entries gathered, and the cards that
// changed.
func (p *poller) flushLocked() {
	h := p.d.hub
	if len(p.pendingRows) > 0 {
		h.publishLocked("audit", map[string]any{"rows": p.pendingRows, "skipped": p.skipped})
		p.pendingRows, p.skipped = nil, 0
	}
	if len(p.pendingTimeline) > 0 {
		h.publishLocked("timeline", map[string]any{"entries": p.pendingTimeline})
		p.pendingTimeline = nil
	}
	for a := range p.dirtyCards {
		delete(p.dirtyCards, a)
		c := p.d.st.byShort[a]
		if c == nil {
			continue
		}
		v := p.d.st.cardView(c)
		if !same(v, p.sent[a]) {
			p.sent[a] = v
			h.publishLocked("agent", v)
		}
	}
}

// everySecondLocked checks that running servers still run, and sends the
// figures of the window (which move with time) and the confirmations
// (which expire) when they changed.
func (p *poller) everySecondLocked() {
	st := &p.d.st
	for _, si := range st.sessions {
		if si.State == serveRunning && si.here() && !procs.Alive(si.PID, si.StartTicks) {
			si.State = serveGone
			p.dirtyCards[si.agent] = true
		}
	}
	st.pruneSessions()
	stats := st.computeStats(time.Now())
	if !same(stats.Tools, st.stats.Tools) || !same(stats.Agents, st.stats.Agents) || st.dirty {
		st.stats, st.dirty = stats, false
		p.d.hub.publishLocked("stats", stats)
	}
	p.approvalsChanged()
}

// loadCard reads an agent's todolist and runtime state into its card.
func (p *poller) loadCard(c *Card) {
	c.Todo, c.Runtime, c.Problem = nil, nil, ""
	ctx := context.Background()
	tl, err := p.d.store.Agents().Todolist(ctx, c.Short)
	switch {
	case err != nil:
		c.Problem = "todolist: " + err.Error()
	case tl != nil:
		c.Todo = todoView(tl)
	}
	rs, err := p.d.store.Agents().Runtime(ctx, c.Short)
	switch {
	case err != nil:
		c.Problem = "runtime state: " + err.Error()
	case rs != nil:
		c.Runtime = &Runtime{Phase: clip(redact.String(rs.Phase), 200), Status: clip(redact.String(rs.Status), 200),
			Message: clip(redact.String(rs.Message), maxRuntimeMsg), UpdatedAt: rs.UpdatedAt}
	}
}

func todoView(tl *store.Todolist) *Todo {
	t := &Todo{Total: len(tl.Items), ProgressPct: tl.ProgressPct, Blocked: []Step{}, Steps: []Step{}}
	if !tl.UpdatedAt.IsZero() {
		u := tl.UpdatedAt
		t.UpdatedAt = &u
	}
	for _, it := range tl.Items {
		s := Step{ID: it.ID, Description: clip(redact.String(it.Description), maxStepText), Status: it.Status, Note: clip(redact.String(it.Note), maxStepText)}
		t.Steps = append(t.Steps, s)
		switch it.Status {
		case "done", "skipped":
			t.Done++
		case "blocked":
			t.Blocked = append(t.Blocked, s)
		}
		if it.ID == tl.Current {
			cur := s
			t.Current = &cur
		}
	}
	return t
}

func (p *poller) loadConfirmations() {
	entries, err := p.d.store.Confirmations().List(context.Background())
	p.d.st.approvals.Problem = ""
	if err != nil {
		p.d.st.approvals.Problem = err.Error()
		return
	}
	p.entries = entries
}

// approvalsChanged rebuilds the confirmations' view (an entry expires with
// time alone) and sends it when it changed.
func (p *poller) approvalsChanged() {
	now := time.Now()
	v := Approvals{Pending: []Approval{}, Recent: []Approval{}, Problem: p.d.st.approvals.Problem}
	keep := map[string]bool{}
	for _, e := range p.entries {
		a := Approval{ID: e.ID, Status: e.Status, Agent: shortAgent(e.Agent), Tool: e.Tool, Session: e.SessionID,
			Arguments: e.Arguments, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, DecidedAt: e.DecidedAt,
			UsedAt: e.UsedAt, UsedBy: e.UsedBy, Decision: e.Decision}
		open := e.Status == confirm.Pending || e.Status == confirm.Approved || e.Status == confirm.Denied
		if open && now.After(e.ExpiresAt) {
			a.Status = confirm.Expired
		}
		if a.Status == confirm.Pending {
			keep[e.ID] = true
			if _, ok := p.diffs[e.ID]; !ok {
				p.diffs[e.ID] = p.d.diffOf(e)
			}
			a.Diff = p.diffs[e.ID]
			v.Pending = append(v.Pending, a)
			continue
		}
		if now.Sub(e.CreatedAt) < window {
			v.Recent = append(v.Recent, a)
		}
	}
	for id := range p.diffs {
		if !keep[id] {
			delete(p.diffs, id)
		}
	}
	sort.Slice(v.Pending, func(i, j int) bool { return v.Pending[i].CreatedAt.Before(v.Pending[j].CreatedAt) })
	sort.Slice(v.Recent, func(i, j int) bool { return lastChange(v.Recent[i]).After(lastChange(v.Recent[j])) })
	if len(v.Recent) > recentShown {
		v.Recent = v.Recent[:recentShown]
	}
	if !same(v, p.d.st.approvals) {
		p.d.st.approvals = v
		p.d.hub.publishLocked("approvals", v)
	}
}

func lastChange(a Approval) time.Time {
	switch {
	case a.UsedAt != nil:
		return *a.UsedAt
	case a.DecidedAt != nil:
		return *a.DecidedAt
	}
	return a.CreatedAt
}

// loadBoard reads the bug index (never writing it) and the triager's
// summary into the board, and sends it when it changed.
func (p *poller) loadBoard() {
	b := Board{Columns: []Column{}}
	sums, err := p.d.store.Bugs().Summaries(context.Background())
	if err != nil {
		b.Problem = err.Error()
	}
	var tri triageSummary
	if _, err := p.d.readJSON(bugs.TriageSummaryPath, &tri); err != nil && b.Problem == "" {
		b.Problem = bugs.TriageSummaryPath + ": " + err.Error()
	}
	cols := map[string]*Column{}
	for _, s := range bugs.Statuses {
		b.Columns = append(b.Columns, Column{Status: s, Bugs: []BugCard{}})
	}
	for i := range b.Columns {
		cols[b.Columns[i].Status] = &b.Columns[i]
	}
	for _, s := range sums {
		status := s.Status
		if s.Unreadable != "" {
			status = bugs.StatusOpen
		}
		col := cols[status]
		if col == nil {
			b.Columns = append(b.Columns, Column{Status: status, Bugs: []BugCard{}})
			// Appending may move the columns: index them again.
			for i := range b.Columns {
				cols[b.Columns[i].Status] = &b.Columns[i]
			}
			col = cols[status]
		}
		col.Count++
		b.Total++
		card := BugCard{ID: s.ID, Title: clip(redact.String(s.Title), 300), UnitID: s.UnitID, Severity: s.Severity,
			Category: s.Category, Evidence: s.Evidence, UpdatedAt: s.UpdatedAt, Unreadable: s.Unreadable}
		if t := tri.Bugs[s.ID]; t != nil {
			if t.Category != "" {
				card.Category, card.Confidence = t.Category, t.Confidence
			}
			for _, n := range t.Similar {
				card.Similar = append(card.Similar, Similar{ID: n.ID, Score: n.Score})
			}
		}
		col.Bugs = append(col.Bugs, card)
	}
	for i := range b.Columns {
		c := &b.Columns[i]
		sort.Slice(c.Bugs, func(i, j int) bool {
			if ri, rj := bugs.SeverityRank(c.Bugs[i].Severity), bugs.SeverityRank(c.Bugs[j].Severity); ri != rj {
				return ri < rj
			}
			return bugs.IDNumber(c.Bugs[i].ID) > bugs.IDNumber(c.Bugs[j].ID)
		})
		if len(c.Bugs) > maxBugsShown {
			c.Bugs = c.Bugs[:maxBugsShown]
		}
	}
	if !same(b, p.d.st.board) {
		p.d.st.board = b
		p.d.hub.publishLocked("bugs", b)
	}
}

// docs lists the project's document sites and contracts.
func (d *Dashboard) docs() []Doc {
	out := []Doc{}
	for _, site := range []string{"prd", "sdd"} {
		if fi, err := d.root.Stat(site + "/index.html"); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		title := strings.ToUpper(site)
		var sj struct {
			Title string `json:"title"`
		}
		if ok, err := d.readJSON(site+"/site.json", &sj); ok && err == nil && sj.Title != "" {
			title += " · " + clip(sj.Title, 120)
		}
		out = append(out, Doc{Title: title, Path: site + "/index.html", Kind: "site"})
	}
	dir, err := d.root.Open("contracts")
	if err != nil {
		return out
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return out
	}
	sort.Strings(names)
	for _, n := range names {
		ext := path.Ext(n)
		if strings.HasPrefix(n, ".") || n == "hashes.json" || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			continue
		}
		if len(out) >= maxDocsShown {
			break
		}
		out = append(out, Doc{Title: n, Path: "contracts/" + n, Kind: "contract"})
	}
	return out
}
