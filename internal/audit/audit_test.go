package audit_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/sandbox"
)

func TestRedactArguments(t *testing.T) {
	t.Parallel()
	big := `{"text":"` + strings.Repeat("x", audit.MaxArguments) + `"}`
	cases := []struct {
		name, in string
		want     string
	}{
		{"no secrets kept byte for byte", `{"b": 1, "a":"x"}`, `{"b": 1, "a":"x"}`},
		{"top-level token", `{"token":"t","a":1}`, `{"token":"[REDACTED]","a":1}`},
		{"case and dashes", `{"Authorization":"Bearer x","X-Api-Key":"k","APIKEY":"k2"}`,
			`{"Authorization":"[REDACTED]","X-Api-Key":"[REDACTED]","APIKEY":"[REDACTED]"}`},
		{"nested objects and arrays", `{"headers":[{"Cookie":"c"},{"ok":"v"}],"auth":{"client_secret":"s","user":"u"}}`,
			`{"headers":[{"Cookie":"[REDACTED]"},{"ok":"v"}],"auth":"[REDACTED]"}`},
		{"secret object replaced whole", `{"password":{"old":"a","new":"b"}}`, `{"password":"[REDACTED]"}`},
		{"secret word in a value only is kept", `{"note":"my password is not here"}`, `{"note":"my password is not here"}`},
		{"secret in a value", `{"command":"curl -H 'Authorization: Bearer abc123def456' -u me:pw9 https://x"}`,
			`{"command":"curl -H 'Authorization: Bearer [REDACTED]' -u me:[REDACTED] https://x"}`},
		{"numbers kept exactly", `{"token":"x","n":12345678901234567890}`, `{"token":"[REDACTED]","n":12345678901234567890}`},
		{"non-ASCII key folds like IsSecretKey", "{\"API-\u212aEY\":\"k\",\"é\":1}", "{\"API-\u212aEY\":\"[REDACTED]\",\"é\":1}"},
		{"secret key beyond a small document", `{"pad":"` + strings.Repeat("p", 600) + `","Token":"t"}`,
			`{"pad":"` + strings.Repeat("p", 600) + `","Token":"[REDACTED]"}`},
		{"empty", ``, ``},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(audit.RedactArguments(json.RawMessage(tc.in))); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("huge arguments are summarised", func(t *testing.T) {
		t.Parallel()
		var got struct {
			Truncated bool   `json:"truncated"`
			Bytes     int    `json:"bytes"`
			SHA256    string `json:"sha256"`
		}
		if err := json.Unmarshal(audit.RedactArguments(json.RawMessage(big)), &got); err != nil || !got.Truncated || got.Bytes != len(big) || len(got.SHA256) != 64 {
			t.Fatalf("got %+v (%v)", got, err)
		}
	})
	t.Run("invalid JSON is stored as a string", func(t *testing.T) {
		t.Parallel()
		got := audit.RedactArguments(json.RawMessage(`{"a":`))
		if !json.Valid(got) || !strings.Contains(string(got), "invalid_json") {
			t.Fatalf("got %s", got)
		}
	})
}

func TestFileSinkConcurrentAppends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	door, err := sandbox.New(dir, "toolhost", []string{".toolhost/**"})
	if err != nil {
		t.Fatal(err)
	}
	defer door.Close()
	sink := audit.NewFileSink(door, audit.Options{SyncEvery: 5 * time.Millisecond})
	const writers, each = 8, 50
	pad := strings.Repeat("y", 20000)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				args, _ := json.Marshal(map[string]string{"pad": pad})
				if err := sink.Write(&audit.Row{CallID: fmt.Sprintf("%d-%d", w, i), Tool: "t", Status: "ok", Arguments: args}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	f, err := os.Open(filepath.Join(dir, audit.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, bad, err := audit.Read(f, audit.Filter{})
	if err != nil || bad != 0 || len(rows) != writers*each {
		t.Fatalf("rows %d bad %d err %v", len(rows), bad, err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.CallID] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct rows, want %d", len(seen), writers*each)
	}
}

func TestReadFilterStats(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	var buf bytes.Buffer
	add := func(agent, tool string, status audit.Status, ms float64, age time.Duration) {
		b, _ := json.Marshal(audit.Row{TS: now.Add(-age), CallID: "c", Agent: agent, Tool: tool, Status: status, DurationMS: ms})
		buf.Write(append(b, '\n'))
	}
	for i := 1; i <= 100; i++ {
		add("pm", "a", audit.StatusOK, float64(i), time.Minute)
	}
	add("coder", "b", audit.StatusRejected, 1, time.Hour)
	add("coder", "b", audit.StatusTimeout, 50, time.Minute)
	add("coder", "b", audit.StatusOKFalse, 2, time.Minute)
	add("coder", "b", audit.StatusSuperseded, 0, time.Minute)
	buf.WriteString("not json\n{\"tool\":\"torn") // a torn last line

	cases := []struct {
		name string
		f    audit.Filter
		want int
	}{
		{"all", audit.Filter{}, 104},
		{"tool", audit.Filter{Tool: "b"}, 4},
		{"status", audit.Filter{Status: string(audit.StatusOK)}, 100},
		{"agent short", audit.Filter{Agent: "coder"}, 4},
		{"agent long", audit.Filter{Agent: "devloop-coder"}, 4},
		{"since", audit.Filter{Tool: "b", Since: now.Add(-30 * time.Minute)}, 3},
	}
	for _, tc := range cases {
		rows, bad, err := audit.Read(bytes.NewReader(buf.Bytes()), tc.f)
		if err != nil || bad != 2 || len(rows) != tc.want {
			t.Errorf("%s: %d rows, %d bad, %v; want %d rows, 2 bad", tc.name, len(rows), bad, err, tc.want)
		}
	}
	rows, _, _ := audit.Read(bytes.NewReader(buf.Bytes()), audit.Filter{})
	stats := audit.Stats(rows)
	want := []audit.ToolStats{
		{Tool: "a", Count: 100, OK: 100, P50MS: 50, P99MS: 99},
		{Tool: "b", Count: 3, OKFalse: 1, Rejected: 1, Failed: 1, P50MS: 2, P99MS: 50},
	}
	if fmt.Sprint(stats) != fmt.Sprint(want) {
		t.Fatalf("stats %+v, want %+v", stats, want)
	}
}

// TestFileSinkFollowsRotation: the sink keeps its descriptor open, but when
// the file is moved away (rotation) the next rows land in a new file at the
// path, not in the moved one.
func TestFileSinkFollowsRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	door, err := sandbox.New(dir, "toolhost", []string{".toolhost/**"})
	if err != nil {
		t.Fatal(err)
	}
	defer door.Close()
	sink := audit.NewFileSink(door, audit.Options{SyncEvery: 5 * time.Millisecond})
	defer sink.Close()
	if err := sink.Write(&audit.Row{Tool: "before", Status: audit.StatusOK}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, audit.Path)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := sink.Write(&audit.Row{Tool: "after", Status: audit.StatusOK}); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), `"tool":"after"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("rows kept going to the rotated file")
		}
		time.Sleep(10 * time.Millisecond)
	}
	old, _ := os.ReadFile(path + ".1")
	if !strings.Contains(string(old), `"tool":"before"`) {
		t.Errorf("rotated file lost its rows: %s", old)
	}
}
