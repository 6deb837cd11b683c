package integrator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tools/devloop/safety"
)

// server is the real toolhost binary serving an integrator session.
type server struct {
	*stdioclient.Client
	dir   string
	mu    sync.Mutex
	notes []stdioclient.Message
}

// proxyEnv points every proxy variable at a port nothing listens on, and
// drops any NO_PROXY, so a request that honoured them would fail.
func proxyEnv(t *testing.T) []string {
	dead := fmt.Sprintf("http://127.0.0.1:%d", deadPort(t))
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		env = append(env, kv)
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env = append(env, k+"="+dead)
	}
	return env
}

func startServer(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	c := testutil.ServeEnv(t, proxyEnv(t), "--project-dir", dir, "--agent", "integrator", "--session", "sess-bin")
	s := &server{Client: c, dir: dir}
	// Notifications are buffered by the client, so none sent during
	// initialize is lost.
	go func() {
		for m := range c.Notifications() {
			s.mu.Lock()
			s.notes = append(s.notes, m)
			s.mu.Unlock()
		}
	}()
	return s
}

// call runs a tool that must succeed with ok:true and decodes its result.
func (s *server) call(t *testing.T, name string, args any, token string, out any) {
	t.Helper()
	var meta map[string]any
	if token != "" {
		meta = map[string]any{"progressToken": token}
	}
	testutil.ResultOK(t, name, testutil.CallToolMeta(t, s.Client, name, args, meta), out)
}

type progressNote struct {
	Token    string  `json:"progressToken"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

func (s *server) progress(token string) []progressNote {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []progressNote
	for _, m := range s.notes {
		var p progressNote
		if m.Method == "notifications/progress" && json.Unmarshal(m.Params, &p) == nil && p.Token == token {
			out = append(out, p)
		}
	}
	return out
}

func checkProgress(t *testing.T, s *server, token string, min int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.progress(token)) < min && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	notes := s.progress(token)
	if len(notes) < min {
		t.Fatalf("%d progress notifications for %s, want at least %d", len(notes), token, min)
	}
	for i, n := range notes {
		if n.Message == "" || n.Total <= 0 || (i > 0 && n.Progress <= notes[i-1].Progress) {
			t.Fatalf("progress for %s not increasing with total and message: %+v", token, notes)
		}
	}
}

func (s *server) units(t *testing.T) UnitsFile {
	t.Helper()
	var uf UnitsFile
	b, err := os.ReadFile(filepath.Join(s.dir, UnitsPath))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &uf); err != nil {
		t.Fatal(err)
	}
	return uf
}

func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, _ := procs.GroupMembers(pgid)
		if len(m) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of unit group %d outlived toolhost", m, pgid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBinaryIntegrationFlow drives the real binary: ports, two units, a
// health wait and a three-step case, with proxy variables pointing at a dead
// port; then stdin EOF must stop both units.
func TestBinaryIntegrationFlow(t *testing.T) {
	t.Parallel()
	bin := unitServer(t)
	s := startServer(t)
	for _, u := range []string{"api", "web"} {
		if err := os.MkdirAll(filepath.Join(s.dir, "units", u), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var ports PortPickerOutput
	s.call(t, "port_picker", map[string]any{"units": []string{"api", "web"}}, "", &ports)
	var started SpawnUnitsOutput
	s.call(t, "spawn_units", map[string]any{"action": "start", "units": []any{
		map[string]any{"id": "api", "argv": []string{bin, "-mode", "echo"}},
		map[string]any{"id": "web", "argv": []string{bin, "-mode", "slow", "-delay", "300ms"}},
	}}, "tok-spawn", &started)
	checkProgress(t, s, "tok-spawn", 2)
	var health HealthWaitOutput
	s.call(t, "health_wait", map[string]any{"targets": []any{
		map[string]any{"unit": "api", "url": fmt.Sprintf("http://127.0.0.1:%d/health", ports.Ports["api"])},
		map[string]any{"unit": "web", "url": fmt.Sprintf("http://localhost:%d/health", ports.Ports["web"])},
	}, "timeout_ms": 20000, "interval_ms": 50}, "tok-health", &health)
	checkProgress(t, s, "tok-health", 1)
	var run RunCaseOutput
	s.call(t, "run_case", map[string]any{"case": map[string]any{"id": "items", "steps": []any{
		map[string]any{"name": "create", "method": "POST", "url": "http://127.0.0.1:{{port:api}}/items",
			"body": map[string]any{"name": "pen"}, "expect": map[string]any{"status": 201, "json_subset": map[string]any{"name": "pen"}},
			"capture": map[string]any{"id": "/id"}},
		map[string]any{"name": "read", "method": "GET", "url": "http://127.0.0.1:{{port:api}}/items/{{var:id}}",
			"expect": map[string]any{"status": 200, "json_subset": map[string]any{"id": "{{var:id}}", "name": "pen"}}},
		map[string]any{"name": "missing", "method": "GET", "url": "http://127.0.0.1:{{port:api}}/items/none", "expect": map[string]any{"status": 404}},
	}}}, "tok-case", &run)
	if run.Passed != 3 || run.Steps[1].URL != fmt.Sprintf("http://127.0.0.1:%d/items/item-1", ports.Ports["api"]) {
		t.Fatalf("run = %+v", run)
	}
	checkProgress(t, s, "tok-case", 3)
	uf := s.units(t)
	if err := s.Close(20 * time.Second); err != nil {
		t.Fatalf("toolhost exit after EOF: %v\n%s", err, s.Stderr())
	}
	for _, id := range []string{"api", "web"} {
		waitGroupGone(t, uf.Units[id].PGID)
	}
	after := s.units(t)
	for _, id := range []string{"api", "web"} {
		if after.Units[id].State != "stopped" {
			t.Fatalf("units.json %s after exit = %+v, want stopped", id, after.Units[id])
		}
	}
}

// TestBinarySIGTERMStopsUnits sends SIGTERM to toolhost while a unit with a
// child that ignores SIGTERM runs: the whole group must go.
func TestBinarySIGTERMStopsUnits(t *testing.T) {
	t.Parallel()
	bin := unitServer(t)
	s := startServer(t)
	if err := os.MkdirAll(filepath.Join(s.dir, "units", "stubborn"), 0o755); err != nil {
		t.Fatal(err)
	}
	var started SpawnUnitsOutput
	s.call(t, "spawn_units", map[string]any{"action": "start", "units": []any{
		map[string]any{"id": "stubborn", "argv": []string{bin, "-mode", "stubborn"}, "port": deadPort(t)},
	}}, "", &started)
	pgid := started.Units[0].PGID
	waitGroupSize(t, pgid, 2)
	if err := syscall.Kill(s.Process().PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGroupGone(t, pgid)
	deadline := time.Now().Add(10 * time.Second)
	for s.units(t).Units["stubborn"].State != "stopped" {
		if time.Now().After(deadline) {
			t.Fatalf("units.json after SIGTERM = %+v", s.units(t).Units["stubborn"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBinaryCancelEndsHealthWait cancels a long health wait through
// notifications/cancelled and finds it audited as cancelled, long before
// its timeout.
func TestBinaryCancelEndsHealthWait(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id, _, err := s.Dispatch("tools/call", map[string]any{
		"name": "health_wait",
		"arguments": map[string]any{"targets": []any{map[string]any{"url": fmt.Sprintf("http://127.0.0.1:%d/", deadPort(t))}},
			"timeout_ms": 110000, "interval_ms": 50},
		"_meta": map[string]any{"progressToken": "tok-cancel"},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkProgress(t, s, "tok-cancel", 1)
	if err := s.Notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "test"}); err != nil {
		t.Fatal(err)
	}
	// The audit row is written when the call has ended; 110 s is the
	// timeout it would otherwise run to.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if row := auditRow(t, s.dir, "health_wait"); row != nil {
			if row["status"] != "cancelled" {
				t.Fatalf("audit row = %v, want status cancelled", row)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("health_wait still running 20 s after notifications/cancelled")
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Call(ctx, "ping", nil); err != nil {
		t.Fatalf("server not serving after the cancel: %v", err)
	}
}

func auditRow(t *testing.T, dir, tool string) map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, ".toolhost", "audit.ndjson"))
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var row map[string]any
		if json.Unmarshal(sc.Bytes(), &row) == nil && row["tool"] == tool {
			return row
		}
	}
	return nil
}

// TestBinarySpawnUnitsArgvGuarded starts units whose argv runs a shell that
// would hand inline JSON to curl, against a loopback sink: the engine's
// Bash guard refuses the start, nothing reaches the sink and no unit is
// recorded; an argv without one starts.
func TestBinarySpawnUnitsArgvGuarded(t *testing.T) {
	t.Parallel()
	testutil.NeedTool(t, "curl", "", "bash scripts/deps/60-guard-sink.sh")
	var hits atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer sink.Close()
	s := startServer(t)
	for _, u := range []string{"u", "w"} {
		if err := os.MkdirAll(filepath.Join(s.dir, "units", u), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		unit map[string]any
	}{
		{"sh -c", map[string]any{"id": "u", "argv": []string{"sh", "-c", `curl -s -d '{"a":1}' ` + sink.URL}}},
		{"bash -c with a positional argument", map[string]any{"id": "u", "argv": []string{"bash", "-c", `curl -s -d "$1" ` + sink.URL, "bash", `{"a":1}`}}},
		{"env value handed on", map[string]any{"id": "u", "argv": []string{"sh", "-c", `curl -s -d "$BODY" ` + sink.URL}, "env": map[string]string{"BODY": `{"a":1}`}}},
		{"curl itself", map[string]any{"id": "u", "argv": []string{"curl", "-s", "--json", `{"a":1}`, sink.URL}}},
	}
	for _, tc := range cases {
		r := testutil.CallTool(t, s.Client, "spawn_units", map[string]any{"action": "start", "units": []any{
			map[string]any{"id": "w", "argv": []string{"sleep", "5"}}, tc.unit}})
		if !r.IsError || !strings.Contains(r.Text(), "units[1].argv: Bash guard: blocked inline JSON handed to curl") {
			t.Errorf("%s: result %v %s, want the guard's refusal naming units[1].argv", tc.name, r.IsError, r.Text())
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the sink got %d requests from refused units", n)
	}
	// The session created the (empty) units record when it opened: it
	// must still hold no unit.
	var uf UnitsFile
	if b, err := os.ReadFile(filepath.Join(s.dir, UnitsPath)); err == nil {
		if err := json.Unmarshal(b, &uf); err != nil || len(uf.Units) != 0 {
			t.Fatalf("a refused start recorded units: %s", b)
		}
	}
	var started SpawnUnitsOutput
	s.call(t, "spawn_units", map[string]any{"action": "start", "units": []any{
		map[string]any{"id": "u", "argv": []string{"sh", "-c", "sleep 5"}}}}, "", &started)
	var stopped SpawnUnitsOutput
	s.call(t, "spawn_units", map[string]any{"action": "stop"}, "", &stopped)
}

// TestBinaryIntegratorWritesIntegrationDir: on a fresh project the
// integrator's commands create files directly in integration/, its
// allow-list, confined by the kernel: toolhost's own records of units and
// ports live in .toolhost/, so no store of toolhost's is carved out of it,
// and a command still cannot forge them there.
func TestBinaryIntegratorWritesIntegrationDir(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	var out safety.BashOutput
	s.call(t, "bash", map[string]any{"command": "echo made > integration/notes.txt && cat integration/notes.txt"}, "", &out)
	if out.Sandbox.ABI == 0 {
		t.Skipf("commands are not confined here (%s): nothing to show", out.Sandbox.Unconfined)
	}
	if out.ExitCode != 0 || strings.TrimSpace(out.Stdout) != "made" {
		t.Fatalf("exit %d, stdout %q, stderr %q: the command could not write integration/", out.ExitCode, out.Stdout, out.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(s.dir, "integration", "notes.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("integration/notes.txt = %q, %v", b, err)
	}
	before, err := os.ReadFile(filepath.Join(s.dir, UnitsPath))
	if err != nil {
		t.Fatalf("the session did not create %s: %v", UnitsPath, err)
	}
	testutil.CallTool(t, s.Client, "bash", map[string]any{"command": `echo '{"units":{"x":{"pgid":1}}}' > .toolhost/units.json`})
	if after, _ := os.ReadFile(filepath.Join(s.dir, UnitsPath)); string(after) != string(before) {
		t.Fatalf("a command rewrote %s: %s", UnitsPath, after)
	}
}
