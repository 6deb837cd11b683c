package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// What a client was told of one attempt of a call.
type told int

const (
	toldOK told = iota
	// toldUnavailable: the store's retryable error saying the write was
	// not stored.
	toldUnavailable
	// toldMaybe: the store's error saying the write's commit went
	// unanswered, so it may have been stored.
	toldMaybe
	// toldNothing: no answer (the server was killed, or the request never
	// reached a live one).
	toldNothing
)

func (t told) String() string {
	return [...]string{"ok", "unavailable", "maybe stored", "no answer"}[t]
}

// attemptLog is one attempt of a logical call, with what its client was
// told and by which process.
type attemptLog struct {
	callID string
	told   told
	seq    int64  // timeline_append: the seq told
	bug    string // bug_open: the id told
	by     *failingServer
	proc   int // the server process that answered (its start number)
}

func (a attemptLog) String() string {
	return fmt.Sprintf("%s by %s's process %d: %s (seq %d, bug %q)", a.callID, a.by.name, a.proc, a.told, a.seq, a.bug)
}

// failingServer is one `toolhost serve` of a machine that the test kills
// with SIGKILL and starts again with the same session; the log of every
// process it ran is kept (what a killed one logged stays readable).
type failingServer struct {
	name, agent string
	args, env   []string

	mu    sync.Mutex
	cond  *sync.Cond
	c     *stdioclient.Client // nil while killed
	procs int                 // processes started
	logs  []string            // each process's stderr, by start number
	// killed says which of them were killed: what they kept in memory
	// died with them, and their log is where it is.
	killed []bool
	busy   bool // a call is in flight
	calls  int  // attempts begun
	done   bool // its worker made its last call
}

func (s *failingServer) start(t *testing.T) error {
	c, err := stdioclient.Start(testutil.Toolhost(t), append([]string{"serve"}, s.args...), s.env)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx, "2025-06-18", nil); err != nil {
		_ = c.Close(20 * time.Second)
		return fmt.Errorf("initialize %s: %v\n%s", s.name, err, c.Stderr())
	}
	s.mu.Lock()
	s.c = c
	s.procs++
	s.logs = append(s.logs, "")
	s.killed = append(s.killed, false)
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}

// startUntil starts the server again until it starts (a server cannot
// start while the database is down), within two minutes.
func (s *failingServer) startUntil(t *testing.T) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := s.start(t)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s does not start again: %v", s.name, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// client waits for a live process and returns it with its start number.
func (s *failingServer) client() (*stdioclient.Client, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.c == nil {
		s.cond.Wait()
	}
	s.busy = true
	s.calls++
	return s.c, s.procs - 1
}

func (s *failingServer) idle() {
	s.mu.Lock()
	s.busy = false
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *failingServer) finished() {
	s.mu.Lock()
	s.done = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *failingServer) begun() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// kill waits until a call is in flight, then SIGKILLs the process's group
// and keeps its log.
func (s *failingServer) kill(t *testing.T) {
	s.mu.Lock()
	for (!s.busy || s.c == nil) && !s.done {
		s.cond.Wait()
	}
	if s.done {
		s.mu.Unlock()
		t.Errorf("%s made its last call before it could be killed in one", s.name)
		return
	}
	c := s.c
	s.c = nil
	s.killed[len(s.killed)-1] = true
	s.mu.Unlock()
	_ = syscall.Kill(-c.Process().PGID, syscall.SIGKILL)
	_ = c.Close(time.Minute) // waits for the exit and the last of its output
	s.keepLog(c)
}

func (s *failingServer) keepLog(c *stdioclient.Client) {
	s.mu.Lock()
	s.logs[len(s.logs)-1] = c.Stderr()
	s.mu.Unlock()
}

// stop ends the live process as a client does (stdin closed), which
// writes what its audit trail keeps in memory.
func (s *failingServer) stop(t *testing.T) {
	s.mu.Lock()
	c := s.c
	s.c = nil
	s.mu.Unlock()
	if c == nil {
		return
	}
	if err := c.Close(time.Minute); err != nil {
		t.Errorf("%s at the end: %v\n%s", s.name, err, c.Stderr())
	}
	s.keepLog(c)
}

// TestTwoMachinesUnderFailure is the two-machines load (two checkouts of
// one project, six `serve` processes each, one database) while servers
// are killed with SIGKILL in the middle of calls and the database is
// stopped and started again on its port, once with pg_ctl stop -m fast and
// once with -m immediate (a crash) while more servers are killed. Every
// attempt's answer is counted against what the database holds afterwards:
//
//   - an attempt told ok has its row, with the seq or bug id it was told;
//   - an attempt told "unavailable" stored nothing of its call (these
//     calls make one write);
//   - an attempt told "may have been stored", or not answered at all, has
//     at most one row;
//   - no timeline entry is stored twice, though half the calls are tried
//     again with the same _meta.call_id until one attempt is told ok, and
//     every one of those ends stored once;
//   - one bug per fingerprint, whichever machine opened it;
//   - the audit trail is one chain that verifies, and every answered
//     attempt has its row there, or in its server's log as the row that
//     could not be written; no call has more rows than attempts.
func TestTwoMachinesUnderFailure(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	url := pg.CreateDB(t, "failure")
	const pid = "two-machines-failure"
	env := append(os.Environ(), "TOOLHOST_STORE="+url, "TOOLHOST_PID="+pid)
	agents := []string{"pm", "architect", "coder", "tester", "integrator", "bug-triager"}
	var servers []*failingServer
	for _, m := range []string{"A", "B"} {
		dir := t.TempDir()
		for i, ag := range agents {
			s := &failingServer{name: fmt.Sprintf("%s%d", m, i), agent: ag, env: env}
			s.args = []string{"--project-dir", dir, "--agent", ag, "--session", "sess-" + s.name}
			s.cond = sync.NewCond(&s.mu)
			servers = append(servers, s)
		}
	}
	var started sync.WaitGroup
	for _, s := range servers {
		started.Go(func() { s.startUntil(t) })
	}
	started.Wait()
	if t.Failed() {
		return
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.stop(t)
		}
	})

	// The shared titles every bug-opening server reports: one bug each.
	titles := []string{"Login returns 500", "Session cookie lost on refresh", "Export times out"}
	// Each worker calls until the failures are over, then makes afterCalls
	// more: load before, during and after each of them.
	const afterCalls = 4
	var (
		mu       sync.Mutex
		changed  = sync.NewCond(&mu)
		attempts = map[string][]attemptLog{} // by call id
		toldOf   = map[told]int{}
		over     bool // the failures are over
	)
	record := func(a attemptLog) {
		mu.Lock()
		attempts[a.callID] = append(attempts[a.callID], a)
		toldOf[a.told]++
		changed.Broadcast()
		mu.Unlock()
	}
	// waitFor waits until cond holds of what the clients were told, for at
	// most five minutes (a generous bound: nothing here is timed).
	waitFor := func(what string, cond func() bool) {
		end := time.Now().Add(5 * time.Minute)
		wake := time.AfterFunc(5*time.Minute, func() { mu.Lock(); changed.Broadcast(); mu.Unlock() })
		defer wake.Stop()
		mu.Lock()
		defer mu.Unlock()
		for !cond() {
			if time.Now().After(end) {
				t.Fatalf("waited five minutes for %s; told so far: %v", what, toldOf)
			}
			changed.Wait()
		}
	}
	// A call: a tester's and an integrator's every third call opens one of
	// the shared bugs; every other call is a timeline entry of its own.
	callOf := func(s *failingServer, j int) (string, map[string]any) {
		if (s.agent == "tester" || s.agent == "integrator") && j%3 == 2 {
			ti := titles[(j/3)%len(titles)]
			return "bug_open", map[string]any{"title": ti, "unit_id": "api", "severity": "major",
				"evidence": map[string]any{"test": "suite > " + ti, "log": "seen by " + s.name}}
		}
		return "timeline_append", map[string]any{"kind": "load", "message": fmt.Sprintf("%s %d", s.name, j)}
	}
	// attempt makes one attempt of a call and says what it was told.
	attempt := func(s *failingServer, name, callID string, args map[string]any) (attemptLog, bool) {
		c, proc := s.client()
		defer s.idle()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		r, err := c.CallTool(ctx, name, args, map[string]any{"call_id": callID})
		a := attemptLog{callID: callID, by: s, proc: proc}
		switch {
		case ctx.Err() != nil:
			t.Errorf("%s %s: a live server gave no answer within 3 minutes", s.name, callID)
			return a, false
		case err != nil:
			a.told = toldNothing
		case r.IsError && strings.Contains(r.Text(), "may have been stored"):
			a.told = toldMaybe
		case r.IsError && strings.Contains(r.Text(), "cannot be reached right now"):
			a.told = toldUnavailable
		case r.IsError:
			t.Errorf("%s %s: %s", s.name, callID, r.Text())
			return a, false
		default:
			var out struct {
				Seq int64  `json:"seq"`
				ID  string `json:"id"`
			}
			if err := json.Unmarshal(r.StructuredContent, &out); err != nil {
				t.Errorf("%s %s: %v in %s", s.name, callID, err, r.StructuredContent)
				return a, false
			}
			a.told, a.seq, a.bug = toldOK, out.Seq, out.ID
		}
		return a, true
	}
	var workers sync.WaitGroup
	for _, s := range servers {
		workers.Go(func() {
			defer s.finished()
			left := -1
			for j := 0; left != 0; j++ {
				mu.Lock()
				if over && left < 0 {
					left = afterCalls
				}
				mu.Unlock()
				if left > 0 {
					left--
				}
				name, args := callOf(s, j)
				callID := fmt.Sprintf("%s-%d", s.name, j)
				// Odd calls are tried again, with the same call id, until an
				// attempt is told ok; even calls are tried once.
				for n := 0; ; n++ {
					a, ok := attempt(s, name, callID, args)
					if !ok {
						return
					}
					record(a)
					if a.told == toldOK || j%2 == 0 {
						break
					}
					if n == 100 {
						t.Errorf("%s %s: 100 attempts and none told ok", s.name, callID)
						return
					}
				}
			}
		})
	}

	kill := func(victims ...*failingServer) {
		var wg sync.WaitGroup
		for _, v := range victims {
			wg.Go(func() { v.kill(t) })
		}
		wg.Wait()
	}
	restart := func(victims ...*failingServer) {
		var wg sync.WaitGroup
		for _, v := range victims {
			wg.Go(func() { v.startUntil(t) })
		}
		wg.Wait()
	}
	okMore := func(n int) func() bool {
		mu.Lock()
		want := toldOf[toldOK] + n
		mu.Unlock()
		return func() bool { return toldOf[toldOK] >= want }
	}
	// inFlightWhileDown waits until n servers have begun a call since the
	// database went down: calls in flight against it.
	inFlightWhileDown := func(n int) {
		before := make([]int, len(servers))
		for i, s := range servers {
			before[i] = s.begun()
		}
		for end := time.Now().Add(5 * time.Minute); ; {
			got := 0
			for i, s := range servers {
				if s.begun() > before[i] {
					got++
				}
			}
			if got >= n {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("waited five minutes for %d calls to begin while the database is down", n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The failures, each while the load runs.
	// 1. Two servers, one per machine, killed in the middle of a call and
	// started again with their sessions.
	waitFor("40 calls told ok", okMore(40))
	kill(servers[1], servers[8])
	restart(servers[1], servers[8])
	// 2. The database stopped (fast: sessions ended, clients told it is
	// shutting down) under calls in flight, and started again on its port
	// once more calls have begun against it.
	waitFor("40 more calls told ok", okMore(40))
	if err := pg.StopMode(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	inFlightWhileDown(6)
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	// 3. The database crashes (immediate: every connection dropped
	// unanswered, recovery at the next start) and two more servers are
	// killed in the middle of their calls while it is down; it starts
	// again once clients have been told it is away.
	waitFor("40 more calls told ok after the restart", okMore(40))
	mu.Lock()
	away := toldOf[toldUnavailable] + toldOf[toldMaybe]
	mu.Unlock()
	if err := pg.StopMode(pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	kill(servers[4], servers[11])
	waitFor("two clients told the store is away", func() bool { return toldOf[toldUnavailable]+toldOf[toldMaybe] >= away+2 })
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	restart(servers[4], servers[11])
	mu.Lock()
	over = true
	mu.Unlock()
	workers.Wait()
	for _, s := range servers {
		s.stop(t)
	}
	if t.Failed() {
		return
	}
	t.Logf("attempts by what they were told: %v", toldOf)

	// What the database holds.
	ctx := context.Background()
	db, err := pgstore.Open(ctx, url, pgstore.Options{ProjectID: pid})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries := map[string][]int64{} // call id → seqs of its "load" entries
	var last int64
	if _, err := db.Timeline().Each(ctx, func(e store.TimelineEntry) error {
		if e.Seq <= last {
			return fmt.Errorf("timeline seq %d after %d", e.Seq, last)
		}
		last = e.Seq
		if e.Kind == "load" {
			entries[e.CallID] = append(entries[e.CallID], e.Seq)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	bugsByTitle := map[string][]string{}
	if _, err := db.Bugs().Each(ctx, func(b *bugs.Bug) error {
		bugsByTitle[b.Title] = append(bugsByTitle[b.Title], b.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, ti := range titles {
		if len(bugsByTitle[ti]) != 1 {
			t.Errorf("bug %q stored as %v: want one bug for its fingerprint", ti, bugsByTitle[ti])
		}
	}
	if len(bugsByTitle) != len(titles) {
		t.Errorf("bugs %v, want one for each of %v", bugsByTitle, titles)
	}
	for callID, as := range attempts {
		stored := entries[callID]
		if len(stored) > 1 {
			t.Errorf("call %s stored %d times (seqs %v); its attempts: %v", callID, len(stored), stored, as)
		}
		gotOK := false
		for _, a := range as {
			switch {
			case a.told == toldOK && a.bug != "":
				gotOK = true
				if !slices.ContainsFunc(titles, func(ti string) bool { return slices.Contains(bugsByTitle[ti], a.bug) }) {
					t.Errorf("call %s told bug %s, which the database does not hold: %v", callID, a.bug, bugsByTitle)
				}
			case a.told == toldOK:
				gotOK = true
				if len(stored) != 1 || stored[0] != a.seq {
					t.Errorf("call %s told ok with seq %d; the database holds %v", callID, a.seq, stored)
				}
			case a.told == toldUnavailable && len(as) == 1 && len(stored) > 0:
				t.Errorf("call %s told unavailable (not stored); the database holds it at %v", callID, stored)
			}
		}
		if !gotOK && retried(callID) {
			t.Errorf("call %s, tried again until told ok, never was: %v", callID, as)
		}
	}

	// The audit trail: one chain; every attempt answered by a server that
	// was stopped has its row (kept in memory while the database was away,
	// written once it was back or at the stop); one answered by a server
	// killed later has its row or the row in that server's log; no call
	// has more rows than attempts.
	v, err := db.Audit().Verify(ctx)
	if err != nil || v.Problem != nil {
		t.Fatalf("audit verify: %+v %v", v, err)
	}
	rows := map[string]int{}
	if _, err := db.Audit().EachLine(ctx, audit.Filter{}, func(r *audit.Row, _ []byte) error {
		rows[r.CallID]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	logged := map[string]int{} // by call id, in the logs of killed servers
	for _, s := range servers {
		for i, l := range s.logs {
			for line := range strings.Lines(l) {
				var e struct {
					Event  string `json:"event"`
					CallID string `json:"call_id"`
				}
				if s.killed[i] && json.Unmarshal([]byte(line), &e) == nil && e.Event == "audit_write_failed" {
					logged[e.CallID]++
				}
			}
		}
	}
	for callID, as := range attempts {
		answered, byStopped := 0, 0
		for _, a := range as {
			if a.told != toldNothing {
				answered++
				if !a.by.killed[a.proc] {
					byStopped++
				}
			}
		}
		if rows[callID] > len(as) {
			t.Errorf("call %s has %d audit rows for %d attempts", callID, rows[callID], len(as))
		}
		if rows[callID] < byStopped || rows[callID]+logged[callID] < answered {
			t.Errorf("call %s: %d attempts answered (%d by servers stopped, not killed), %d audit rows, %d in killed servers' logs as not written: %v",
				callID, answered, byStopped, rows[callID], logged[callID], as)
		}
	}
}

// retried reports whether call NAME-J is one tried again until told ok:
// its J is odd.
func retried(callID string) bool {
	var name string
	var j int
	if _, err := fmt.Sscanf(strings.Replace(callID, "-", " ", 1), "%s %d", &name, &j); err != nil {
		return false
	}
	return j%2 == 1
}
