package dashboard_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestLateStartShowsCurrentState: a dashboard started after a server made
// its calls shows them, its timeline and the server running (from its
// session.start event, checked against the process); once the server is
// killed with SIGKILL — it never writes session.end — it shows as gone.
func TestLateStartShowsCurrentState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pm := testutil.Serve(t, "--project-dir", dir, "--agent", "pm", "--session", "sess-late")
	testutil.CallToolMeta(t, pm, "timeline_append", map[string]any{"kind": "note", "message": "before the dashboard"}, map[string]any{"call_id": "call-late-1"})
	testutil.CallToolMeta(t, pm, "write_todolist", map[string]any{"items": []map[string]any{{"id": "step-001", "description": "write the PRD"}}},
		map[string]any{"call_id": "call-late-2"})
	d := runDashboard(t, "--project-dir", dir)
	s := d.state(t)
	if len(s.Audit) != 2 || s.Audit[0].CallID != "call-late-2" || s.Audit[1].CallID != "call-late-1" {
		t.Fatalf("audit %+v, want the two calls, newest first", s.Audit)
	}
	if len(s.Timeline) != 1 || s.Timeline[0].Message != "before the dashboard" {
		t.Fatalf("timeline %+v", s.Timeline)
	}
	card := func(s snapshot) int {
		for i, a := range s.Agents {
			if a.Short == "pm" {
				return i
			}
		}
		t.Fatalf("no pm card in %+v", s.Agents)
		return 0
	}
	c := s.Agents[card(s)]
	if len(c.Serving) != 1 || c.Serving[0].PID != pm.Process().PID || c.LastCall == nil || c.LastCall.Tool != "write_todolist" {
		t.Fatalf("pm card %+v, want serving pid %d and the last call", c, pm.Process().PID)
	}
	if err := syscall.Kill(pm.Process().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() string {
		c := d.state(t).Agents[card(s)]
		if len(c.Serving) != 0 || c.LastServe == nil || c.LastServe.State != "gone" {
			return "the killed server still shows as running or not as gone"
		}
		return ""
	})
}

// sse reads Server-Sent Events.
type sse struct {
	res *http.Response
	br  *bufio.Reader
}

type event struct{ id, name, data string }

func openSSE(t testing.TB, url, lastID string) *sse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s = %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return &sse{res: res, br: bufio.NewReaderSize(res.Body, 1<<20)}
}

// next returns the next event whose name is in names (others are passed
// over).
func (s *sse) next(t testing.TB, names ...string) event {
	t.Helper()
	var ev event
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.name != "" && slices.Contains(names, ev.name) {
				return ev
			}
			ev = event{}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
}

// TestStreamReconnects: a page that reconnects with Last-Event-ID gets the
// calls it missed and no new snapshot; one whose id the server does not
// know (another process's, or too old) gets a snapshot.
func TestStreamReconnects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pm := testutil.Serve(t, "--project-dir", dir, "--agent", "pm", "--session", "sess-sse")
	d := runDashboard(t, "--project-dir", dir)
	events := d.URL + "api/events"
	first := openSSE(t, events, "")
	snap := first.next(t, "snapshot")
	testutil.CallToolMeta(t, pm, "timeline_append", map[string]any{"kind": "note", "message": "one"}, map[string]any{"call_id": "call-sse-1"})
	ev := first.next(t, "audit")
	if !strings.Contains(ev.data, "call-sse-1") {
		t.Fatalf("audit event %s", ev.data)
	}
	first.res.Body.Close()
	testutil.CallToolMeta(t, pm, "timeline_append", map[string]any{"kind": "note", "message": "two"}, map[string]any{"call_id": "call-sse-2"})
	// The dashboard has seen the second call once its state says so.
	eventually(t, 10*time.Second, func() string {
		if s := d.state(t); len(s.Audit) == 0 || s.Audit[0].CallID != "call-sse-2" {
			return "the second call is not in the state"
		}
		return ""
	})
	again := openSSE(t, events, ev.id)
	missed := again.next(t, "audit", "snapshot")
	if missed.name != "audit" || !strings.Contains(missed.data, "call-sse-2") || strings.Contains(missed.data, "call-sse-1") {
		t.Fatalf("after reconnecting from %s: %s %s, want the missed call only", ev.id, missed.name, missed.data)
	}
	for _, id := range []string{"0000-5", "nonsense", snap.id + "99999"} {
		if got := openSSE(t, events, id).next(t, "audit", "snapshot"); got.name != "snapshot" {
			t.Errorf("Last-Event-ID %q: %s first, want a snapshot", id, got.name)
		}
	}
}

// TestRefusedOverHTTP: the attacks a page of another site, a rebound DNS
// name or a crafted path could make are refused, and they change nothing
// on disk: the pending confirmation stays pending.
func TestRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := t.TempDir()
	secret := "the-outside-secret-4711"
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"prd", "units/api"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"prd/out.html", "units/api/out.txt", "prd/outdir"} {
		target := filepath.Join(outside, "secret.txt")
		if strings.HasSuffix(l, "dir") {
			target = outside
		}
		if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "prd", "index.html"), []byte("<p>the prd</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := confirmPolicy(t, t.TempDir())
	pm := testutil.Serve(t, "--project-dir", dir, "--agent", "pm", "--session", "sess-attack", "--policy", policy)
	r := testutil.CallTool(t, pm, "record_memory", map[string]any{"key": "k", "content": "c"})
	if !r.IsError || !strings.Contains(r.Text(), "needs_confirmation") {
		t.Fatalf("record_memory: %s", r.Text())
	}
	d := runDashboard(t, "--project-dir", dir, "--policy", policy)
	var id string
	eventually(t, 10*time.Second, func() string {
		if p := d.state(t).Approvals.Pending; len(p) == 1 {
			id = p[0].ID
			return ""
		}
		return "no pending confirmation"
	})
	// The server is stopped first: it writes its own files on its own
	// schedule (the audit checkpoint after its fsync, session.end), and
	// the tree must change only by what the dashboard does.
	if err := pm.Close(10 * time.Second); err != nil {
		t.Fatalf("stopping the pm server: %v", err)
	}
	before := treeHash(t, dir)
	if tok := d.pageToken(t, ""); tok != "" {
		t.Fatalf("a page without a session carries a decision token %q", tok)
	}
	cookie, token := d.signIn(t)
	_, otherToken := d.signIn(t)
	if got := d.pageToken(t, cookie); got == "" {
		t.Fatal("a signed-in page carries no decision token")
	}
	host := strings.TrimSuffix(strings.TrimPrefix(d.URL, "http://"), "/")
	own := "http://" + host
	post := func(hdr map[string]string) (int, string) {
		return do(t, http.MethodPost, d.URL+"api/confirmations/"+id+"/approve", hdr, "{}")
	}
	signed := func(h map[string]string) map[string]string {
		h["Cookie"] = cookie
		return h
	}
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no session", map[string]string{"Origin": own, "Content-Type": "application/json", "X-Toolhost-Page-Token": token}, 401},
		{"a made-up session", map[string]string{"Origin": own, "Content-Type": "application/json", "X-Toolhost-Page-Token": token, "Cookie": "toolhost_session=made-up"}, 401},
		{"another session's token", map[string]string{"Origin": own, "Content-Type": "application/json", "X-Toolhost-Page-Token": otherToken, "Cookie": cookie}, 403},
		{"cross-site origin", signed(map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json", "X-Toolhost-Page-Token": token}), 403},
		{"sandboxed page (origin null)", signed(map[string]string{"Origin": "null", "Content-Type": "application/json", "X-Toolhost-Page-Token": token}), 403},
		{"cross-site fetch metadata", signed(map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json", "X-Toolhost-Page-Token": token}), 403},
		{"no page token", signed(map[string]string{"Origin": own, "Content-Type": "application/json"}), 403},
		{"forged page token", signed(map[string]string{"Origin": own, "Content-Type": "application/json", "X-Toolhost-Page-Token": token[:len(token)-2] + "AA"}), 403},
		{"form post (text/plain)", signed(map[string]string{"Origin": own, "Content-Type": "text/plain", "X-Toolhost-Page-Token": token}), 415},
		{"rebound DNS name", signed(map[string]string{"Host": "evil.example:" + host[strings.LastIndexByte(host, ':')+1:], "Content-Type": "application/json", "X-Toolhost-Page-Token": token}), 421},
	} {
		if status, body := post(c.hdr); status != c.want {
			t.Errorf("%s: POST = %d %s, want %d", c.name, status, body, c.want)
		}
	}
	if status, _ := do(t, http.MethodGet, d.URL, map[string]string{"Host": "rebound.example"}, ""); status != 421 {
		t.Errorf("GET / with a foreign Host = %d, want 421", status)
	}
	if status, _ := do(t, http.MethodGet, d.URL+"api/state", map[string]string{"Origin": "http://evil.example"}, ""); status != 403 {
		t.Errorf("GET /api/state from another origin = %d, want 403", status)
	}
	docs := d.docsBase(t)
	for _, p := range []string{
		docs + "prd/out.html", docs + "prd/outdir/secret.txt", docs + "prd/../../" + outside + "/secret.txt", docs + "units/api/out.txt",
		docs + ".toolhost/audit.ndjson", docs + "prd/%2e%2e/%2e%2e/etc/passwd", "/doc/wrong-key/prd/index.html", "/doc/prd/index.html",
		"/api/file?path=units/api/out.txt", "/api/file?path=../" + filepath.Base(outside) + "/secret.txt",
		"/api/file?path=" + filepath.Join(outside, "secret.txt"), "/api/file?path=prd/outdir/secret.txt",
		"/api/file?path=.toolhost/confirmations.json", "/api/file?path=prd/./index.html",
	} {
		status, body := d.get(t, p, nil)
		if status == http.StatusOK || strings.Contains(body, secret) {
			t.Errorf("GET %s = %d %.200s: a path outside the project (or a dot-file) was served", p, status, body)
		}
	}
	// A document is served in a sandbox of its own origin, so its scripts
	// come cross-site: the key in its path lets them, and only them, pass.
	for _, c := range []struct {
		path string
		want int
	}{{docs + "prd/index.html", 200}, {"/doc/wrong-key/prd/index.html", 403}, {"/api/state", 403}} {
		status, body := d.get(t, c.path, map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "script"})
		if status != c.want || c.want == 200 && !strings.Contains(body, "the prd") {
			t.Errorf("cross-site GET %s = %d %.100s, want %d", c.path, status, body, c.want)
		}
	}
	if status, body := d.get(t, "/api/file?path=prd/index.html", nil); status != 200 || !strings.Contains(body, "the prd") {
		t.Errorf("GET /api/file?path=prd/index.html = %d %s", status, body)
	}
	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPost} {
		if status, _ := do(t, m, d.URL+"api/state", map[string]string{"Content-Type": "application/json", "X-Toolhost-Page-Token": token}, "{}"); status != http.StatusMethodNotAllowed {
			t.Errorf("%s /api/state = %d, want 405", m, status)
		}
	}
	for _, p := range []string{"/", "/api/state", "/api/audit?status=rejected", "/api/bugs/BUG-0001", "/assets/app.js", docs + "prd/index.html"} {
		d.get(t, p, nil)
	}
	if after := treeHash(t, dir); after != before {
		t.Fatalf("the project changed though every request was refused or only read:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if p := d.state(t).Approvals.Pending; len(p) != 1 || p[0].ID != id {
		t.Fatalf("the confirmation is no longer pending: %+v", p)
	}
	// The page's own request passes, and the decision is the store's.
	if status, body := post(signed(map[string]string{"Origin": own, "Content-Type": "application/json", "X-Toolhost-Page-Token": token})); status != 200 || !strings.Contains(body, "approved") {
		t.Fatalf("the page's POST = %d %s", status, body)
	}
	if status, body := post(signed(map[string]string{"Origin": own, "Content-Type": "application/json", "X-Toolhost-Page-Token": token})); status != 409 {
		t.Fatalf("deciding it again = %d %s, want 409", status, body)
	}
}

// TestNoSecretInArgv: the dashboard takes no secret on its command line or
// in its environment, where every process of the user reads it: the old
// --auth-token and TOOLHOST_AUTH_TOKEN are refused, saying why, before it
// listens.
func TestNoSecretInArgv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  string
	}{
		{[]string{"--auth-token", "s3cret"}, ""},
		{nil, "TOOLHOST_AUTH_TOKEN=s3cret"},
	} {
		cmd := exec.Command(testutil.Toolhost(t), append([]string{"dashboard", "--project-dir", t.TempDir()}, c.args...)...)
		cmd.Env = append(os.Environ(), c.env)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "/proc/PID/") {
			t.Errorf("dashboard %v %s: %v\n%s", c.args, c.env, err, out)
		}
	}
}
