package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestRotationSixProcesses runs six toolhost processes on one project with
// small rotation sizes, all writing at once: across every file boundary of
// the timeline, the events and the audit trail no line is lost or
// repeated, the timeline's seq runs 1..N, and the audit trail is one hash
// chain that verifies.
func TestRotationSixProcesses(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	const procs, each = 6, 40
	var wg sync.WaitGroup
	for p := range procs {
		c := start(t, bin, "--agent", "coder", "--project-dir", project, "--session", fmt.Sprintf("s%d", p),
			"--audit-max-bytes", "8192", "--events-max-bytes", "4096", "--timeline-max-bytes", "4096")
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range each {
				id := fmt.Sprintf("p%d-%d", p, i)
				if r, err := c.CallTool(ctx, "timeline_append", map[string]any{"kind": "rot.test", "message": id}, map[string]any{"call_id": id + "-t"}); err != nil || r.IsError {
					t.Errorf("timeline %s: %v %v", id, err, r)
				}
				if r, err := c.CallTool(ctx, "update_runtime_state", map[string]any{"message": id}, map[string]any{"call_id": id + "-r"}); err != nil || r.IsError {
					t.Errorf("runtime %s: %v %v", id, err, r)
				}
			}
			if err := c.Close(10 * time.Second); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	root, err := os.OpenRoot(project)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, rel := range []string{journal.TimelinePath, journal.EventsPath, audit.Path} {
		segs, err := ndjson.Segments(root, rel)
		if err != nil || len(segs) < 4 {
			t.Fatalf("%s: %d files (%v), want several rotations", rel, len(segs), err)
		}
	}

	var want int64 = 1
	seen := map[string]bool{}
	bad, err := journal.ReadTimeline(root, ndjson.Options{}, func(e store.TimelineEntry, at ndjson.Pos) error {
		if e.Seq != want {
			return fmt.Errorf("%s: seq %d, want %d", at, e.Seq, want)
		}
		want++
		if seen[e.Message] {
			return fmt.Errorf("%s: %s twice", at, e.Message)
		}
		seen[e.Message] = true
		return nil
	})
	if err != nil || bad.Count > 0 || len(seen) != procs*each {
		t.Fatalf("timeline: %v, %s, %d entries, want %d", err, bad, len(seen), procs*each)
	}

	events := map[string]bool{}
	announced := map[string]bool{}
	bad, err = journal.ReadEvents(root, ndjson.Options{}, func(e store.Event, at ndjson.Pos) error {
		if e.Kind == store.EventSessionStart || e.Kind == store.EventSessionEnd {
			// Each server announces itself (not a call's event).
			k := e.Kind + " " + e.Session
			if announced[k] {
				return fmt.Errorf("%s: %s twice", at, k)
			}
			announced[k] = true
			return nil
		}
		if events[e.CallID] {
			return fmt.Errorf("%s: event of %s twice", at, e.CallID)
		}
		events[e.CallID] = true
		return nil
	})
	if err != nil || bad.Count > 0 || len(events) != procs*each || len(announced) != 2*procs {
		t.Fatalf("events: %v, %s, %d calls' and %d announcements, want %d and %d", err, bad, len(events), len(announced), procs*each, 2*procs)
	}

	v, err := audit.Verify(project)
	if err != nil || v.Problem != nil || v.Rows != 2*procs*each {
		t.Fatalf("audit verify: %v %+v, %d rows, want %d", err, v.Problem, v.Rows, 2*procs*each)
	}
}
