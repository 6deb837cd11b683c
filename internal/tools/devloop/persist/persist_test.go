package persist

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

// recorder is an in-memory event and timeline sink.
type recorder struct {
	mu     sync.Mutex
	events []store.Event
	lines  []store.TimelineEntry
}

func (r *recorder) Emit(_ context.Context, e store.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) Append(_ context.Context, e store.TimelineEntry) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Seq = int64(len(r.lines) + 1)
	r.lines = append(r.lines, e)
	return e.Seq, nil
}

// newCtx builds the Ctx of a PM call on a fresh project, with the events
// and timeline going to an in-memory recorder and a clock that stands still.
func newCtx(t *testing.T) (*callctx.Ctx, *recorder, string) {
	t.Helper()
	rec := &recorder{}
	c := testutil.NewCtx(t, testutil.CtxOptions{Agent: "pm", Events: rec, Timeline: rec,
		Clock: testutil.NewFakeClock(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), 0)})
	return c, rec, c.ProjectDir
}

func steps(specs ...string) []TodoItemInput {
	var out []TodoItemInput
	for _, s := range specs {
		id, deps, _ := strings.Cut(s, "<")
		it := TodoItemInput{ID: id, Description: "do " + id}
		if deps != "" {
			it.DependsOn = strings.Split(deps, ",")
		}
		out = append(out, it)
	}
	return out
}

func TestCheckGraph(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		items []TodoItemInput
		want  string // substring of the reason; "" = valid
	}{
		{"chain", steps("step-001", "step-002<step-001", "step-003<step-001,step-002"), ""},
		{"duplicate id", steps("step-001", "step-001"), "duplicate step id step-001"},
		{"unknown dependency", steps("step-001<step-009"), "unknown step step-009"},
		{"self dependency", steps("step-001<step-001"), "depends on itself"},
		{"two-step cycle", steps("step-001<step-002", "step-002<step-001"), "cycle: step-001 → step-002 → step-001"},
		{"long cycle", steps("step-001<step-003", "step-002<step-001", "step-003<step-002"), "cycle: step-001 → step-003 → step-002 → step-001"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := checkGraph(tc.items)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("checkGraph = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTodoProgressAndCurrent(t *testing.T) {
	t.Parallel()
	c, rec, dir := newCtx(t)
	ctx := context.Background()
	out, err := writeTodolist(ctx, c, WriteTodolistInput{Items: steps("step-001", "step-002<step-001", "step-003<step-002", "step-004")})
	if err != nil || !out.OK || out.Total != 4 {
		t.Fatalf("write: %+v %v", out, err)
	}
	moves := []struct {
		id, status string
		failed     string // reason substring when refused
		pct        int
		current    string
	}{
		{"step-002", "doing", "step-002 cannot be doing while step-001 not done", 0, ""},
		{"step-001", "done", "", 25, "step-002"},
		{"step-003", "done", "while step-002 not done", 0, ""},
		{"step-002", "skipped", "", 50, "step-004"},
		{"step-004", "done", "", 75, ""},
		{"step-009", "done", "unknown step step-009", 0, ""},
	}
	for _, m := range moves {
		got, err := updateTodoItem(ctx, c, UpdateTodoItemInput{ID: m.id, Status: m.status})
		var f *tool.Failure
		if m.failed != "" {
			if !errors.As(err, &f) || !strings.Contains(f.Reason, m.failed) {
				t.Fatalf("%s→%s: want refusal %q, got %+v %v", m.id, m.status, m.failed, got, err)
			}
			continue
		}
		if err != nil || got.ProgressPct != m.pct || got.Current != m.current {
			t.Fatalf("%s→%s: got %+v %v, want pct %d current %q", m.id, m.status, got, err, m.pct, m.current)
		}
	}
	// step-003 depends on step-002, which was skipped (not done): it stays
	// blocked, so current is empty although step-003 is not finished.
	var tl store.Todolist
	b, _ := os.ReadFile(filepath.Join(dir, store.TodoPath("pm")))
	if err := json.Unmarshal(b, &tl); err != nil || tl.Items[2].Status != "todo" {
		t.Fatalf("stored todolist: %s", b)
	}
	kinds := map[string]int{}
	for _, e := range rec.events {
		kinds[e.Kind]++
	}
	if kinds["agent.todolist"] != 1 || kinds["agent.todo_item"] != 3 {
		t.Errorf("events = %v, want 1 agent.todolist and 3 agent.todo_item (refusals emit nothing)", kinds)
	}
}

func TestUpdateWithoutTodolist(t *testing.T) {
	t.Parallel()
	c, _, _ := newCtx(t)
	_, err := updateTodoItem(context.Background(), c, UpdateTodoItemInput{ID: "step-001", Status: "done"})
	var f *tool.Failure
	if !errors.As(err, &f) || !strings.Contains(f.Reason, "call write_todolist first") {
		t.Fatalf("want ok:false telling to write the todolist first, got %v", err)
	}
}

func TestRecordMemory(t *testing.T) {
	t.Parallel()
	c, _, dir := newCtx(t)
	ctx := context.Background()
	first, err := recordMemory(ctx, c, RecordMemoryInput{Key: "api-style", Content: "use REST", Tags: []string{"b", "a"}})
	if err != nil || !first.Created || first.Path != "memory/devloop/pm/api-style.md" {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := recordMemory(ctx, c, RecordMemoryInput{Key: "api-style", Content: "use REST and JSON"})
	if err != nil || again.Created {
		t.Fatalf("replace: %+v %v", again, err)
	}
	note, _ := os.ReadFile(filepath.Join(dir, "memory/devloop/pm/api-style.md"))
	if string(note) != "use REST and JSON\n" {
		t.Errorf("note = %q", note)
	}
	var idx MemoryIndex
	b, _ := os.ReadFile(filepath.Join(dir, "memory/devloop/pm/index.json"))
	if err := json.Unmarshal(b, &idx); err != nil || len(idx.Entries) != 1 || idx.Entries["api-style"].Bytes != len("use REST and JSON") {
		t.Errorf("index = %s", b)
	}
}

func TestRuntimeStateMerges(t *testing.T) {
	t.Parallel()
	c, _, _ := newCtx(t)
	ctx := context.Background()
	if _, err := updateRuntimeState(ctx, c, UpdateRuntimeStateInput{Phase: "prd", Data: map[string]any{"a": 1, "b": 2}}); err != nil {
		t.Fatal(err)
	}
	out, err := updateRuntimeState(ctx, c, UpdateRuntimeStateInput{Status: "waiting", Data: map[string]any{"a": nil, "c": 3}})
	if err != nil {
		t.Fatal(err)
	}
	st := out.State
	if st.Phase != "prd" || st.Status != "waiting" || st.Data["a"] != nil || st.Data["b"] == nil || st.Data["c"] == nil {
		t.Errorf("merged state = %+v", st)
	}
}

// The stored todolist carries no zero timestamps ("0001-01-01…"): a step
// that was never updated was last changed when the list was written.
func TestTodolistTimestamps(t *testing.T) {
	t.Parallel()
	c, _, dir := newCtx(t)
	if _, err := writeTodolist(context.Background(), c, WriteTodolistInput{Items: steps("step-001", "step-002<step-001")}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, store.TodoPath("pm")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "0001-01-01") {
		t.Errorf("todolist holds zero timestamps:\n%s", b)
	}
	var tl store.Todolist
	if err := json.Unmarshal(b, &tl); err != nil {
		t.Fatal(err)
	}
	for _, it := range tl.Items {
		if !it.UpdatedAt.Equal(tl.CreatedAt) {
			t.Errorf("%s updated_at %v, want the list's created_at %v", it.ID, it.UpdatedAt, tl.CreatedAt)
		}
	}
}
