package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/store"
)

// How far back the start looks, in rows and events: the newest rows to
// show, the last hour's calls for the figures (at most windowCalls), and
// each agent's last call if it is among them.
const (
	maxStartRows = windowCalls + auditShown
	// maxLastCallRows bounds the search for the last call of an agent
	// that has none among the rows above.
	maxLastCallRows = 20_000
	maxStartEvents  = 500_000
	// batchEvery gathers the calls and timeline entries of this long into
	// one message, and is how often changed cards are sent: a project
	// making thousands of calls a second must not flood the pages.
	batchEvery = 100 * time.Millisecond
	// maxBatch bounds one message; a burst past it sends its newest rows
	// and says how many it left out.
	maxBatch = auditShown
)

// run loads the current state, then follows the project until ctx ends.
func (d *Dashboard) run(ctx context.Context) {
	auditFrom := d.loadAudit(ctx)
	timelineFrom := d.loadTimeline(ctx)
	eventsFrom := d.loadSessions(ctx)
	d.hub.mu.Lock()
	p := newPoller(d)
	p.pollLocked(true)
	d.st.stats = d.st.computeStats(time.Now())
	d.st.dirty = false
	d.hub.mu.Unlock()
	close(d.ready)

	go d.follow(ctx, "audit trail", auditFrom, func(ctx context.Context, from *store.Cursor, next func(store.Cursor)) error {
		return d.store.Audit().Follow(ctx, from, func(r *audit.Row, c store.Cursor) error {
			v := auditRow(r)
			d.hub.mu.Lock()
			d.st.addCall(v, true)
			p.pendingRows = append(p.pendingRows, v)
			if len(p.pendingRows) > 2*maxBatch {
				p.skipped += len(p.pendingRows) - maxBatch
				p.pendingRows = append(p.pendingRows[:0], p.pendingRows[len(p.pendingRows)-maxBatch:]...)
			}
			p.dirtyCards[v.Agent] = true
			d.hub.mu.Unlock()
			next(c)
			return nil
		})
	})
	go d.follow(ctx, "timeline", timelineFrom, func(ctx context.Context, from *store.Cursor, next func(store.Cursor)) error {
		return d.store.Timeline().Follow(ctx, from, func(e store.TimelineEntry, c store.Cursor) error {
			v := timelineEntry(e)
			d.hub.mu.Lock()
			d.st.timeline.push(v)
			p.pendingTimeline = append(p.pendingTimeline, v)
			if len(p.pendingTimeline) > timelineShown {
				p.pendingTimeline = p.pendingTimeline[len(p.pendingTimeline)-timelineShown:]
			}
			d.hub.mu.Unlock()
			next(c)
			return nil
		})
	})
	go d.follow(ctx, "events", eventsFrom, func(ctx context.Context, from *store.Cursor, next func(store.Cursor)) error {
		return d.store.Events().Follow(ctx, from, func(e store.Event, c store.Cursor) error {
			d.hub.mu.Lock()
			p.event(e)
			d.hub.mu.Unlock()
			next(c)
			return nil
		})
	})
	changes := make(chan store.Change, 256)
	go func() {
		for ctx.Err() == nil {
			err := d.store.Watch(ctx, func(c store.Change) {
				select {
				case changes <- c:
				case <-ctx.Done():
				}
			})
			if err == nil || ctx.Err() != nil {
				return
			}
			d.o.Log.Warn().Err(err).Msg("watching the store failed; trying again in a second")
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()

	batch := time.NewTicker(batchEvery)
	defer batch.Stop()
	poll := time.NewTicker(d.o.Poll)
	defer poll.Stop()
	second := time.NewTicker(time.Second)
	defer second.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-changes:
			d.hub.mu.Lock()
			p.changed(c)
			d.hub.mu.Unlock()
		case <-batch.C:
			d.hub.mu.Lock()
			p.flushLocked()
			d.hub.mu.Unlock()
		case <-poll.C:
			d.hub.mu.Lock()
			p.pollLocked(false)
			d.hub.mu.Unlock()
		case <-second.C:
			d.hub.mu.Lock()
			p.everySecondLocked()
			d.hub.mu.Unlock()
		}
	}
}

// follow runs a follower until ctx ends, starting it again from where it
// stopped after an error (a file replaced by hand, a database restarting).
func (d *Dashboard) follow(ctx context.Context, what string, from store.Cursor, run func(ctx context.Context, from *store.Cursor, next func(store.Cursor)) error) {
	cur := from
	for ctx.Err() == nil {
		err := run(ctx, &cur, func(c store.Cursor) { cur = c })
		if err == nil || ctx.Err() != nil {
			return
		}
		d.o.Log.Warn().Err(err).Str("log", what).Msg("following the log failed; trying again in a second")
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// loadAudit reads the trail from its end: the rows to show, the last
// hour's calls and each agent's last call; it returns the cursor to
// follow from.
func (d *Dashboard) loadAudit(ctx context.Context) store.Cursor {
	cutoff := time.Now().Add(-window)
	var shown []AuditRow
	var calls []call
	scanned := 0
	d.hub.mu.Lock()
	defer d.hub.mu.Unlock()
	missing := len(d.st.cards)
	end, err := d.store.Audit().Backward(ctx, func(r *audit.Row) bool {
		scanned++
		recent := !r.TS.Before(cutoff)
		if len(shown) < auditShown {
			shown = append(shown, auditRow(r))
		}
		if recent && len(calls) < windowCalls {
			calls = append(calls, call{ts: r.TS, agent: shortAgent(r.Agent), tool: r.Tool, status: r.Status, duration: r.DurationMS})
		}
		if c := d.st.byShort[shortAgent(r.Agent)]; c != nil && c.LastCall == nil && !notACall(r.Status) {
			c.LastCall = &LastCall{TS: r.TS, Tool: r.Tool, Status: r.Status, ErrorKind: r.ErrorKind, DurationMS: r.DurationMS}
			missing--
		}
		more := len(shown) < auditShown || recent && len(calls) < windowCalls || missing > 0 && scanned < maxLastCallRows
		return more && scanned < maxStartRows
	})
	if err != nil {
		d.o.Log.Warn().Err(err).Msg("reading the audit trail failed; following it from its end")
	}
	for i := len(shown) - 1; i >= 0; i-- {
		d.st.audit.push(shown[i])
	}
	for i := len(calls) - 1; i >= 0; i-- {
		d.st.calls.push(calls[i])
	}
	return end
}

func (d *Dashboard) loadTimeline(ctx context.Context) store.Cursor {
	var shown []TimelineEntry
	end, err := d.store.Timeline().Backward(ctx, func(e store.TimelineEntry) bool {
		shown = append(shown, timelineEntry(e))
		return len(shown) < timelineShown
	})
	if err != nil {
		d.o.Log.Warn().Err(err).Msg("reading the timeline failed; following it from its end")
	}
	d.hub.mu.Lock()
	defer d.hub.mu.Unlock()
	for i := len(shown) - 1; i >= 0; i-- {
		d.st.timeline.push(shown[i])
	}
	return end
}

// loadSessions finds the servers announced in the events, newest first,
// back to this machine's boot (none of this machine's before it can be
// running; another machine's announced before it are not looked for), and
// checks which of this machine's still run.
func (d *Dashboard) loadSessions(ctx context.Context) store.Cursor {
	boot := bootTime()
	n := 0
	found := map[string]*sessionInfo{}
	end, err := d.store.Events().Backward(ctx, func(e store.Event) bool {
		n++
		if !boot.IsZero() && e.TS.Before(boot) {
			return false
		}
		// The newest event of a session says all: session.end carries the
		// same process as session.start.
		if (e.Kind == store.EventSessionStart || e.Kind == store.EventSessionEnd) && found[e.Session] == nil {
			found[e.Session] = sessionOf(e)
		}
		return n < maxStartEvents
	})
	if err != nil {
		d.o.Log.Warn().Err(err).Msg("reading the events failed; following them from their end")
	}
	d.hub.mu.Lock()
	defer d.hub.mu.Unlock()
	for id, si := range found {
		if si.State == serveRunning && si.here() && !procs.Alive(si.PID, si.StartTicks) {
			si.State = serveGone
		}
		d.st.sessions[id] = si
	}
	return end
}

// sessionOf reads a session.start or session.end event.
func sessionOf(e store.Event) *sessionInfo {
	var p store.Process
	if b, err := json.Marshal(e.Payload); err == nil {
		_ = json.Unmarshal(b, &p)
	}
	si := &sessionInfo{agent: shortAgent(e.Agent), boot: p.Boot, Serve: Serve{
		Session: e.Session, UnitID: e.UnitID, PID: p.PID, StartTicks: p.StartTicks, StartedAt: p.StartedAt, State: serveRunning, Host: p.Host,
	}}
	if e.Kind == store.EventSessionEnd {
		ts := e.TS
		si.State, si.EndedAt = serveEnded, &ts
	}
	return si
}

// bootTime is when the machine started (/proc/stat btime), zero if unknown.
func bootTime() time.Time {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
}

// stamp tells whether a file changed since it was last read.
type stamp struct {
	ino   uint64
	size  int64
	mtime time.Time
	gone  bool
}

// stampOf stats a project-relative file inside the project.
func (d *Dashboard) stampOf(rel string) stamp {
	fi, err := d.root.Stat(rel)
	if err != nil {
		return stamp{gone: true}
	}
	st := stamp{size: fi.Size(), mtime: fi.ModTime()}
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = s.Ino
	}
	return st
}

// readJSON reads a state file through the read-only door; a missing file
// is (false, nil).
func (d *Dashboard) readJSON(rel string, v any) (bool, error) {
	b, err := d.read.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}
