package tester

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/ctxinject"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

// fakeClock advances one second per reading, so timestamps are distinct and
// predictable.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(time.Second)
	return f.now
}

// testAllow is the tester's allow-list in configs/agents.json.
var testAllow = []string{"units/*/tests/**", "reports/**", "agent-state/tester-*.json", "memory/devloop/tester/**"}

// newCtx wires a call context on a fresh project dir with the real sandbox
// doors and journal, as a session does.
func newCtx(t *testing.T, agent, unit string) *ctxinject.Ctx {
	t.Helper()
	dir := t.TempDir()
	files, err := sandbox.New(dir, "devloop-"+agent, testAllow)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := files.With("toolhost", journal.ServiceAllowList)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = files.Close(); _ = shared.Close() })
	svc := ctxinject.Services{
		Files: files, Shared: shared, Timeline: journal.Timeline{Door: shared}, Events: journal.Events{Door: shared},
		Clock: &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, Log: zerolog.Nop(),
	}
	c, err := ctxinject.New(ctxinject.Identity{Agent: agent, AgentName: "devloop-" + agent, UnitID: unit, ProjectDir: files.ProjectDir(), SessionID: "s1"},
		svc, ctxinject.Settings{WriteAllowList: testAllow}, ctxinject.Meta{CallID: "call-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// call runs a tool the way the engine does after validation and returns the
// decoded result, or the error of a rejection or system failure.
func call[Out any](t *testing.T, c *ctxinject.Ctx, tl tool.Tool, args any) (Out, tool.Result, error) {
	t.Helper()
	var out Out
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Call(context.Background(), c, raw)
	if err != nil {
		return out, res, err
	}
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		t.Fatalf("decode %s result %s: %v", tl.Spec().Name, res.Structured, err)
	}
	return out, res, nil
}

// writeProjectFile puts a file into the project dir (test setup, not a tool
// write).
func writeProjectFile(t *testing.T, c *ctxinject.Ctx, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(c.ProjectDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ndjson reads the lines of a project NDJSON file.
func ndjson(t *testing.T, c *ctxinject.Ctx, rel string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.ProjectDir, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: bad line %q: %v", rel, l, err)
		}
		out = append(out, m)
	}
	return out
}
