package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/session"
	"github.com/toolhost/toolhost/internal/store"
)

func open(t *testing.T, id callctx.Identity, policyFile string) *session.Session {
	t.Helper()
	s, err := session.Open(session.Options{Identity: id, PolicyFile: policyFile, Version: "test", Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("Open(%+v): %v", id, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOpenRefusesBadLaunchFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		o      session.Options
		usage  bool
		prefix string
	}{
		{"no agent", session.Options{Identity: callctx.Identity{ProjectDir: dir}}, true, "--agent is required (known: [devloop-architect devloop-bug-triager"},
		{"unknown agent", session.Options{Identity: callctx.Identity{Agent: "ceo", ProjectDir: dir}}, true, `unknown agent "ceo" (known: devloop-architect,`},
		{"no project dir", session.Options{Identity: callctx.Identity{Agent: "pm"}}, true, "--project-dir is required"},
		{"bad unit", session.Options{Identity: callctx.Identity{Agent: "coder", ProjectDir: dir, UnitID: "../up"}}, true, `--unit "../up": must be`},
		{"missing agents file", session.Options{AgentsFile: filepath.Join(dir, "none.json"), Identity: callctx.Identity{Agent: "pm", ProjectDir: dir}}, true, "agents file:"},
		{"project dir is a file", session.Options{Identity: callctx.Identity{Agent: "pm", ProjectDir: notADir}}, false, "project dir not usable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.o.Log = zerolog.Nop()
			s, err := session.Open(tc.o)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			var ue *session.UsageError
			if errors.As(err, &ue) != tc.usage || !strings.HasPrefix(err.Error(), tc.prefix) {
				t.Fatalf("Open = %v (usage error: %t); want usage %t, starting %q", err, errors.As(err, &ue), tc.usage, tc.prefix)
			}
		})
	}
}

// TestOpenWiresTheSession: the identity is resolved, the cwd template
// expanded, the audit file opened at once, and a call runs through the
// engine into the audit trail under the session's identity.
func TestOpenWiresTheSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rel, err := filepath.Rel(mustGetwd(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, callctx.Identity{Agent: "devloop-coder", ProjectDir: rel, UnitID: "todo-be", ProjectID: "p-1"}, "")
	id := s.Engine.Identity
	if id.Agent != "coder" || id.AgentName != "devloop-coder" || id.ProjectDir != dir || !strings.HasPrefix(id.SessionID, "sess-") {
		t.Fatalf("identity %+v; want coder/devloop-coder in %s with a generated session id", id, dir)
	}
	if want := filepath.Join(dir, "units", "todo-be"); s.Engine.Settings.Cwd != want {
		t.Fatalf("cwd %s, want %s", s.Engine.Settings.Cwd, want)
	}
	auditPath := filepath.Join(dir, ".toolhost", "audit.ndjson")
	if _, err := os.Stat(auditPath); err != nil {
		t.Fatalf("the audit file is not opened by Open: %v", err)
	}
	out := s.Engine.Call(context.Background(), engine.Request{Tool: "timeline_append", Args: json.RawMessage(`{"kind":"test.wire","message":"hello"}`)})
	if out.IsError || out.Status != audit.StatusOK {
		t.Fatalf("timeline_append: %+v", out)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var rows []audit.Row
	if _, err := audit.Each(dir, audit.Filter{}, func(r *audit.Row) error { rows = append(rows, *r); return nil }); err != nil || len(rows) != 1 {
		t.Fatalf("audit rows %+v: %v", rows, err)
	}
	row := rows[0]
	if row.Tool != "timeline_append" || row.SessionID != id.SessionID || row.Agent != "coder" || row.UnitID != "todo-be" || row.ProjectID != "p-1" {
		t.Fatalf("audit row %+v", row)
	}
}

type peer struct{ notes chan string }

func (p *peer) Notify(_ context.Context, method string, _ any) error {
	select {
	case p.notes <- method:
	default:
	}
	return nil
}

func (p *peer) Call(context.Context, string, any, any) error { return errors.New("no client") }

func (p *peer) Session() rpc.Peer { return p }

func listed(t *testing.T, s *session.Session) map[string]bool {
	t.Helper()
	res, err := s.Server.Handle(context.Background(), &peer{}, rpc.Request{ID: json.RawMessage("1"), Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	var l struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range l.Tools {
		names[tl.Name] = true
	}
	return names
}

// TestVisibleFollowsThePolicyFile: what tools/list offers, what Visible
// says and what a call gets agree, and follow an edit of the policy file,
// which is announced to a client that has listed the tools.
func TestVisibleFollowsThePolicyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pf := filepath.Join(dir, "tools.json")
	writePolicy(t, pf, `{"tools":{}}`, 1)
	s := open(t, callctx.Identity{Agent: "tester", ProjectDir: filepath.Join(dir, "proj")}, pf)
	client := &peer{notes: make(chan string, 16)}
	if _, err := s.Server.Handle(context.Background(), client, rpc.Request{ID: json.RawMessage("1"), Method: "tools/list"}); err != nil {
		t.Fatal(err)
	}
	if !s.Visible("record_memory") || !listed(t, s)["record_memory"] {
		t.Fatal("record_memory is not offered to the tester under an empty policy")
	}
	for _, name := range []string{"bootstrap_prd_site", "no_such_tool"} {
		if s.Visible(name) || listed(t, s)[name] {
			t.Errorf("%s is offered to the tester", name)
		}
	}

	writePolicy(t, pf, `{"tools":{"record_memory":{"permission":"deny"}}}`, 2)
	deadline := time.After(10 * time.Second)
	for announced := false; !announced; {
		select {
		case m := <-client.notes:
			announced = m == "notifications/tools/list_changed"
		case <-deadline:
			t.Fatal("no notifications/tools/list_changed after the policy file changed")
		}
	}
	if s.Visible("record_memory") || listed(t, s)["record_memory"] {
		t.Fatal("record_memory is still offered after the policy denied it")
	}
	out := s.Engine.Call(context.Background(), engine.Request{Tool: "record_memory", Args: json.RawMessage(`{"topic":"t","text":"x"}`)})
	if out.Kind != fault.Policy || out.Message != `tool record_memory is denied by the tool policy (permission "deny")` {
		t.Fatalf("call of a hidden tool: %+v", out)
	}
}

// TestSessionsAreIndependent: two sessions in one process and one project
// see their own agent's tools, and closing one (twice) leaves the other
// working.
func TestSessionsAreIndependent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pm := open(t, callctx.Identity{Agent: "pm", ProjectDir: dir}, "")
	tester := open(t, callctx.Identity{Agent: "tester", ProjectDir: dir}, "")
	if !pm.Visible("bootstrap_prd_site") || tester.Visible("bootstrap_prd_site") || !tester.Visible("bug_open") || pm.Visible("bug_open") {
		t.Fatal("the two sessions do not see their own agents' tools")
	}
	if err := pm.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pm.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := pm.Files.WriteFile("prd/x.html", []byte("x")); err == nil {
		t.Fatal("a closed session still writes")
	}
	out := tester.Engine.Call(context.Background(), engine.Request{Tool: "timeline_append", Args: json.RawMessage(`{"kind":"test.other","message":"still here"}`)})
	if out.IsError {
		t.Fatalf("the other session broke: %s", out.Message)
	}
}

func writePolicy(t *testing.T, path, body string, step int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// A distinct mtime per step: the reload never depends on the file
	// system's timestamp resolution.
	mt := time.Date(2026, 1, 1, 0, 0, step, 0, time.UTC)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestAnnounce: a session opened with Announce records session.start with
// this process's pid and start time, and session.end when it closes, after
// everything else it wrote; without Announce it records neither.
func TestAnnounce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id := callctx.Identity{Agent: "coder", UnitID: "api", SessionID: "sess-a", ProjectDir: dir}
	s, err := session.Open(session.Options{Identity: id, Version: "v-test", Log: zerolog.Nop(), Announce: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	quiet := open(t, callctx.Identity{Agent: "pm", SessionID: "sess-q", ProjectDir: dir}, "")
	quiet.Close()
	b, err := os.ReadFile(filepath.Join(dir, ".toolhost", "events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("events %q, want session.start and session.end of sess-a only", lines)
	}
	st, err := procs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for i, kind := range []string{store.EventSessionStart, store.EventSessionEnd} {
		var ev struct {
			store.Event
			Payload store.Process `json:"payload"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind != kind || ev.Agent != "coder" || ev.UnitID != "api" || ev.Session != "sess-a" ||
			ev.Payload.PID != os.Getpid() || ev.Payload.StartTicks != st.StartTicks || ev.Payload.Version != "v-test" || ev.Payload.StartedAt.IsZero() {
			t.Errorf("event %d: %s", i, lines[i])
		}
	}
}

// TestSessionIDBelongsToOneAgent: a second agent opened in the project with
// a session id another agent uses is refused at launch (a usage error naming
// both), while the first agent may reopen it and a session without an id
// of its own choosing gets a new one.
func TestSessionIDBelongsToOneAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	coder := open(t, callctx.Identity{Agent: "coder", SessionID: "sess-shared", ProjectDir: dir}, "")
	coder.Close()
	_, err := session.Open(session.Options{Identity: callctx.Identity{Agent: "tester", SessionID: "sess-shared", ProjectDir: dir}, Log: zerolog.Nop()})
	var ue *session.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "session sess-shared belongs to agent coder") || !strings.Contains(err.Error(), "agent tester must use a session of its own") {
		t.Fatalf("tester on the coder's session: %v, want a usage error naming both", err)
	}
	open(t, callctx.Identity{Agent: "coder", SessionID: "sess-shared", ProjectDir: dir}, "").Close()
	open(t, callctx.Identity{Agent: "tester", ProjectDir: dir}, "").Close()
}

// TestMachineLocalStateMoves: a project written before the units and port
// reservations moved to .toolhost/ has them moved when a session opens;
// from then on the old place, which the integrator's commands may write,
// is never read again.
func TestMachineLocalStateMoves(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "integration"), 0o755); err != nil {
		t.Fatal(err)
	}
	units := `{"units":{"api":{"id":"api","pid":1,"state":"exited"}}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "integration", "units.json"), []byte(units), 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, callctx.Identity{Agent: "integrator", ProjectDir: dir}, "")
	s.Close()
	if b, err := os.ReadFile(filepath.Join(dir, ".toolhost", "units.json")); err != nil || string(b) != units {
		t.Fatalf(".toolhost/units.json = %q, %v; want the old record", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "integration", "units.json")); !os.IsNotExist(err) {
		t.Fatalf("the old record is still in integration/ (%v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".toolhost", "ports.json")); err != nil || strings.TrimSpace(string(b)) != "{}" {
		t.Fatalf(".toolhost/ports.json = %q, %v; want an empty record so the old place is never read", b, err)
	}
	// A file a command writes at the old place later is only the
	// integrator's: the next session leaves it and the record alone.
	forged := `{"reservations":{"x":{"port":1}}}`
	if err := os.WriteFile(filepath.Join(dir, "integration", "ports.json"), []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	open(t, callctx.Identity{Agent: "integrator", ProjectDir: dir}, "").Close()
	if b, _ := os.ReadFile(filepath.Join(dir, ".toolhost", "ports.json")); strings.Contains(string(b), "reservations") {
		t.Fatalf("the old place was read again: %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "integration", "ports.json")); string(b) != forged {
		t.Fatalf("integration/ports.json was changed: %s", b)
	}
}
