package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
)

func door(t *testing.T) (*sandbox.Sandbox, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := sandbox.New(dir, "toolhost", ServiceAllowList)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, dir
}

func TestTimelineSeq(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		initial string // timeline content before the appends
		want    int64  // seq of the first append
	}{
		{"new timeline", "", 1},
		{"continues from the last entry", `{"seq":41,"kind":"a"}` + "\n" + `{"seq":42,"kind":"b"}` + "\n", 43},
		{"skips a torn last line", `{"seq":7,"kind":"a"}` + "\n" + `{"seq":8,"ki`, 8},
		{"entry larger than the first window", `{"seq":4,"kind":"a"}` + "\n" + `{"seq":5,"kind":"big","message":"` + strings.Repeat("x", firstWindow+10) + `"}` + "\n", 6},
		{"entry larger than the tail window", `{"seq":5,"kind":"big","message":"` + strings.Repeat("x", tailWindow+10) + `"}` + "\n", 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, dir := door(t)
			if tc.initial != "" {
				if err := os.WriteFile(filepath.Join(dir, TimelinePath), []byte(tc.initial), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tl := Timeline{Door: d}
			for i := int64(0); i < 3; i++ {
				seq, err := tl.Append(store.TimelineEntry{Kind: "test", Message: "m"})
				if err != nil {
					t.Fatal(err)
				}
				if seq != tc.want+i {
					t.Fatalf("append %d: seq %d, want %d", i, seq, tc.want+i)
				}
			}
		})
	}
}

func TestTimelineUnreadable(t *testing.T) {
	t.Parallel()
	d, dir := door(t)
	if err := os.WriteFile(filepath.Join(dir, TimelinePath), []byte("garbage\nmore garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var corrupt *fault.CorruptFile
	if _, err := (Timeline{Door: d}).Append(store.TimelineEntry{Kind: "x"}); !errors.As(err, &corrupt) || corrupt.Path != TimelinePath {
		t.Fatalf("want a corrupt-file error naming %s for an unreadable timeline, got %v", TimelinePath, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, TimelinePath))
	if string(b) != "garbage\nmore garbage\n" {
		t.Errorf("the unreadable timeline was changed: %q", b)
	}
}

func TestEventsEmit(t *testing.T) {
	t.Parallel()
	d, dir := door(t)
	ev := Events{Door: d}
	for _, k := range []string{"a.one", "a.two"} {
		if err := ev.Emit(store.Event{Kind: k, Agent: "pm", CallID: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, EventsPath))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 event lines, got %q", b)
	}
	var e store.Event
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil || e.Kind != "a.two" || e.Agent != "pm" {
		t.Errorf("second event = %+v (%v)", e, err)
	}
}

// TestTimelineRotation: writers in parallel, each through its own door (as
// six processes would), on a timeline that rotates every few entries: seq
// runs 1..N without a gap or a repeat across every file boundary, and the
// reader sees them all in order.
func TestTimelineRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const writers, each = 6, 60
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := sandbox.New(dir, "toolhost", ServiceAllowList)
			if err != nil {
				t.Error(err)
				return
			}
			defer d.Close()
			tl := Timeline{Door: d, MaxBytes: 2000}
			for range each {
				if _, err := tl.Append(store.TimelineEntry{Kind: "k", Message: "m"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	d2, err := sandbox.New(dir, "toolhost", ServiceAllowList)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	segs, err := d2.Segments(TimelinePath)
	if err != nil || len(segs) < 5 {
		t.Fatalf("%d timeline files (%v), want several rotations", len(segs), err)
	}
	var want int64 = 1
	bad, err := ReadTimeline(rootOf(t, dir), ndjson.Options{}, func(e store.TimelineEntry, at ndjson.Pos) error {
		if e.Seq != want {
			return fmt.Errorf("%s: seq %d, want %d", at, e.Seq, want)
		}
		want++
		return nil
	})
	if err != nil || bad.Count != 0 {
		t.Fatalf("%v %s", err, bad)
	}
	if want-1 != writers*each {
		t.Fatalf("read %d entries, want %d", want-1, writers*each)
	}
	// Right after a rotation there is no live file: the next append
	// continues from the newest rotated file's last entry.
	if segs[len(segs)-1].Live() {
		if _, err := d2.RotateLog(TimelinePath); err != nil {
			t.Fatal(err)
		}
	}
	seq, err := (Timeline{Door: d2}).Append(store.TimelineEntry{Kind: "k"})
	if err != nil || seq != writers*each+1 {
		t.Fatalf("seq %d (%v) after a rotation, want %d", seq, err, writers*each+1)
	}
}

func TestReadEventsReportsBadLines(t *testing.T) {
	t.Parallel()
	d, dir := door(t)
	ev := Events{Door: d}
	if err := ev.Emit(store.Event{Kind: "a.one"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, EventsPath), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("{\"kind\":\"torn\n{}\n")
	f.Close()
	if err := ev.Emit(store.Event{Kind: "a.two"}); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	bad, err := ReadEvents(rootOf(t, d.ProjectDir()), ndjson.Options{}, func(e store.Event, _ ndjson.Pos) error {
		kinds = append(kinds, e.Kind)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(kinds, ",") != "a.one,a.two" {
		t.Errorf("kinds %v", kinds)
	}
	if bad.Count != 2 || bad.First[0].Line != 2 || bad.First[1].Line != 3 {
		t.Errorf("bad lines %s, want lines 2 and 3", bad)
	}
}

// TestFollowEventsAcrossRotation: a follower started at the end of the log
// gets every event written afterwards exactly once while the file rotates
// under it; resuming from a cursor continues after the last event seen.
func TestFollowEventsAcrossRotation(t *testing.T) {
	t.Parallel()
	d, _ := door(t)
	ev := Events{Door: d, MaxBytes: 1500}
	if err := ev.Emit(store.Event{Kind: "before"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 1000)
	cursors := make(chan ndjson.Cursor, 1000)
	done := make(chan error, 1)
	// From the end of the log as it is now (a cursor, so the follower's
	// start cannot race the writes below).
	fi, err := os.Stat(filepath.Join(d.ProjectDir(), EventsPath))
	if err != nil {
		t.Fatal(err)
	}
	from := ndjson.Cursor{Ino: fi.Sys().(*syscall.Stat_t).Ino, Off: fi.Size()}
	go func() {
		done <- FollowEvents(ctx, rootOf(t, d.ProjectDir()), ndjson.FollowOptions{From: &from, Poll: 5 * time.Millisecond}, func(e store.Event, next ndjson.Cursor) error {
			got <- e.Kind
			cursors <- next
			return nil
		})
	}()
	const n = 200
	for i := range n {
		if err := ev.Emit(store.Event{Kind: fmt.Sprintf("e%d", i)}); err != nil {
			t.Fatal(err)
		}
		if i%37 == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	var at150 ndjson.Cursor
	for i := range n {
		select {
		case k := <-got:
			c := <-cursors
			if k != fmt.Sprintf("e%d", i) {
				t.Fatalf("event %d is %s", i, k)
			}
			if i == 149 {
				at150 = c
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d events followed", i, n)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-got:
		t.Fatalf("extra event %s", k)
	default:
	}
	segs, _ := d.Segments(EventsPath)
	if len(segs) < 5 {
		t.Fatalf("%d files: the log did not rotate under the follower", len(segs))
	}
	// A reconnect resumes after the cursor it was handed.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	var resumed []string
	err = FollowEvents(ctx2, rootOf(t, d.ProjectDir()), ndjson.FollowOptions{From: &at150, Poll: 5 * time.Millisecond}, func(e store.Event, _ ndjson.Cursor) error {
		resumed = append(resumed, e.Kind)
		if len(resumed) == n-150 {
			cancel2()
		}
		return nil
	})
	if err != nil || len(resumed) != n-150 || resumed[0] != "e150" || resumed[len(resumed)-1] != fmt.Sprintf("e%d", n-1) {
		t.Fatalf("resumed %d events from %v (%v), want e150…e%d", len(resumed), resumed[:min(3, len(resumed))], err, n-1)
	}
}

// rootOf opens the project dir for the readers, closed when the test ends.
func rootOf(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestFollowEventsFromTheEnd: without a cursor only events written after
// the follower started are delivered, none from before.
func TestFollowEventsFromTheEnd(t *testing.T) {
	t.Parallel()
	d, _ := door(t)
	ev := Events{Door: d}
	for range 3 {
		if err := ev.Emit(store.Event{Kind: "before"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 100)
	go func() {
		_ = FollowEvents(ctx, rootOf(t, d.ProjectDir()), ndjson.FollowOptions{Poll: 2 * time.Millisecond}, func(e store.Event, _ ndjson.Cursor) error {
			got <- e.Kind
			return nil
		})
	}()
	for i := 0; ; i++ {
		if err := ev.Emit(store.Event{Kind: fmt.Sprintf("ping.%d", i)}); err != nil {
			t.Fatal(err)
		}
		select {
		case k := <-got:
			if !strings.HasPrefix(k, "ping.") {
				t.Fatalf("delivered %s, written before the follower started", k)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if i > 1000 {
			t.Fatal("nothing delivered")
		}
	}
}
