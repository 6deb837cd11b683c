package journal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
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
				seq, err := tl.Append(callctx.TimelineEntry{Kind: "test", Message: "m"})
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
	if _, err := (Timeline{Door: d}).Append(callctx.TimelineEntry{Kind: "x"}); !errors.As(err, &corrupt) || corrupt.Path != TimelinePath {
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
		if err := ev.Emit(callctx.Event{Kind: k, Agent: "pm", CallID: "c"}); err != nil {
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
	var e callctx.Event
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil || e.Kind != "a.two" || e.Agent != "pm" {
		t.Errorf("second event = %+v (%v)", e, err)
	}
}
