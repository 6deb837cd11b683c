package httpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/upstream/upstreamtest"
)

// served is `toolhost serve --http` running for one test.
type served struct {
	URL string
	srv *testutil.HTTPServer
}

func (s *served) log() string { return s.srv.Log() }

// tokens holds each test server's bearer token by host:port, for client.
var tokens sync.Map

// client is the tests' HTTP client: a request to a test server carries its
// token unless it sets the header noAuth (the tests of the token itself).
var client = &http.Client{Transport: tokenTransport{}}

const noAuth = "X-Test-No-Authorization"

type tokenTransport struct{}

func (tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Header.Get(noAuth) != "" {
		r.Header.Del(noAuth)
	} else if tok, ok := tokens.Load(r.URL.Host); ok && r.Header.Get("Authorization") == "" {
		r.Header.Set("Authorization", "Bearer "+tok.(string))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// serveHTTP starts the real binary with --http and waits for its URL.
func serveHTTP(t *testing.T, project string, extra ...string) *served {
	t.Helper()
	args := append([]string{"--agent", "pm", "--project-dir", project, "--grace", "2s"}, extra...)
	srv := testutil.ServeHTTP(t, testutil.Toolhost(t), args...)
	u, _ := url.Parse(srv.URL)
	tokens.Store(u.Host, srv.Token)
	return &served{URL: srv.URL, srv: srv}
}

func connect(t *testing.T, url string, hc *http.Client, onChange func()) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, url, hc, onChange, "")
}

// connectVersion connects the go-sdk client asking for version ("" = the
// SDK's latest, 2026-07-28) and checks it settled on that.
func connectVersion(t *testing.T, url string, hc *http.Client, onChange func(), version string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if hc == nil {
		hc = client
	}
	if onChange != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { onChange() }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "httpserve-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	want := version
	if want == "" {
		want = "2026-07-28"
	}
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Fatalf("the client settled on %s, want %s", got, want)
	}
	return cs
}

func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestHTTPServesTheSameGate(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	s := serveHTTP(t, project, "--http", "127.0.0.1:0")
	cs := connect(t, s.URL, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*mcp.Tool{}
	for _, tl := range lt.Tools {
		names[tl.Name] = tl
	}
	for _, want := range []string{"write_todolist", "update_todo_item", "update_runtime_state", "timeline_append", "record_memory"} {
		if names[want] == nil {
			t.Fatalf("tools/list over HTTP misses %s: %v", want, names)
		}
	}
	if a := names["write_todolist"].Annotations; a == nil || a.ReadOnlyHint {
		t.Errorf("write_todolist annotations %+v", a)
	}

	cases := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"ok call", "record_memory", map[string]any{"key": "over-http", "content": "hi"}, false, `"created":true`},
		{"schema violation", "record_memory", map[string]any{"key": "Bad Key", "content": "hi"}, true, "does not match pattern"},
		{"expected failure", "update_todo_item", map[string]any{"id": "step-001", "status": "done"}, false, `"ok":false`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			if err != nil {
				t.Fatal(err)
			}
			if r.IsError != c.isError || !strings.Contains(text(r), c.want) {
				t.Fatalf("%s: isError %v %q; want isError %v containing %q", c.tool, r.IsError, text(r), c.isError, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(project, "memory", "devloop", "pm", "over-http.md")); err != nil {
		t.Errorf("the call over HTTP did not write its file: %v", err)
	}
	audit, _ := os.ReadFile(filepath.Join(project, ".toolhost", "audit.ndjson"))
	if n := strings.Count(string(audit), `"tool":"record_memory"`); n != 2 {
		t.Errorf("want 2 audit rows for record_memory, got %d:\n%s", n, audit)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Error("an unknown tool must be a protocol error")
	}
}

// TestHTTPNeedsItsToken: every request needs the bearer token of this
// agent's server in this project, loopback included — no header, a wrong
// token, a prefix of it or the token of another agent's server is 401 and
// runs nothing; the token sits in the secrets directory (0600), never in
// argv or the environment: --auth-token and TOOLHOST_AUTH_TOKEN are refused.
func TestHTTPNeedsItsToken(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		env  string
	}{
		{"--auth-token", []string{"--auth-token", "s3cret-token"}, ""},
		{"TOOLHOST_AUTH_TOKEN", nil, "TOOLHOST_AUTH_TOKEN=s3cret-token"},
	} {
		cmd := exec.Command(testutil.Toolhost(t), append([]string{"serve", "--agent", "pm", "--project-dir", project, "--http", "127.0.0.1:0"}, c.args...)...)
		cmd.Env = append(os.Environ(), "TOOLHOST_SECRETS_DIR="+t.TempDir())
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "/proc/PID/") {
			t.Errorf("%s: err %v, output %s; want exit 2 saying why a secret there is refused", c.name, err, out)
		}
	}

	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
		s := serveHTTP(t, project, "--http", addr)
		if fi, err := os.Stat(filepath.Join(s.srv.SecretsDir)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("secrets dir: %v %v", fi, err)
		}
		ents, _ := os.ReadDir(s.srv.SecretsDir)
		if len(ents) != 1 {
			t.Fatalf("secrets dir holds %d files, want the token alone", len(ents))
		}
		if fi, _ := ents[0].Info(); fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file mode %v", fi.Mode())
		}
		// Bound to every address or to loopback; reach it through loopback.
		port := s.URL[strings.LastIndex(s.URL, ":")+1 : strings.LastIndex(s.URL, "/")]
		target := "http://127.0.0.1:" + port + "/mcp"
		tokens.Store("127.0.0.1:"+port, s.srv.Token)
		coder := testutil.ServeHTTPEnv(t, testutil.Toolhost(t), []string{"TOOLHOST_SECRETS_DIR=" + s.srv.SecretsDir}, "--agent", "coder", "--project-dir", project)
		if coder.Token == s.srv.Token {
			t.Fatal("the coder's server and the PM's have one token")
		}
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"k","message":"m"},` + meta20260728 + `}}`
		for _, c := range []struct {
			name, auth string
			want       int
		}{
			{"no header", "", http.StatusUnauthorized},
			{"wrong token", "Bearer nope", http.StatusUnauthorized},
			{"token prefix only", "Bearer " + s.srv.Token[:20], http.StatusUnauthorized},
			{"another agent's token", "Bearer " + coder.Token, http.StatusUnauthorized},
			{"basic", "Basic " + s.srv.Token, http.StatusUnauthorized},
			{"right token", "Bearer " + s.srv.Token, http.StatusOK},
		} {
			before := timelineLines(t, project)
			h := perRequestHeaders("tools/call", "timeline_append")
			h[noAuth] = "1"
			if c.auth != "" {
				h["Authorization"] = c.auth
			}
			status, _, body := post(t, target, call, h)
			if status != c.want {
				t.Errorf("%s %s: status %d (%s), want %d", addr, c.name, status, body, c.want)
			}
			if ran := timelineLines(t, project) > before; ran != (c.want == http.StatusOK) {
				t.Errorf("%s %s: ran %v", addr, c.name, ran)
			}
		}
		cs := connect(t, target, nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list with the token: %v", err)
		}
		cancel()
	}
}

func TestHTTPWithInspectorCLI(t *testing.T) {
	t.Parallel()
	inspector := testutil.NeedTool(t, "mcp-inspector", "TOOLHOST_INSPECTOR", "bash scripts/deps/30-inspector.sh")
	project := t.TempDir()
	s := serveHTTP(t, project, "--http", "127.0.0.1:0")
	// The Inspector's CLI (0.15) cannot send a header of its own: it talks
	// to the server through a loopback gateway that adds the bearer token,
	// as a reverse proxy in front of a server would.
	target, _ := url.Parse(s.URL)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target.Host})
	proxy.Transport = testutil.Bearer(s.srv.Token, http.DefaultTransport)
	gw := httptest.NewServer(proxy)
	t.Cleanup(gw.Close)
	// The gateway forwards the Host the Inspector sent (its own port on
	// 127.0.0.1), which the server's DNS-rebinding check accepts as loopback.
	endpoint := gw.URL + "/mcp"
	run := func(args ...string) []byte {
		t.Helper()
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			out, err := exec.CommandContext(ctx, inspector, append([]string{"--cli", endpoint}, args...)...).CombinedOutput()
			cancel()
			// About once in a hundred runs on a loaded machine the
			// gateway's copy of a response is cut ("ReverseProxy read
			// error during body copy: … use of closed network
			// connection") and node's fetch reports "terminated"; the
			// server logged nothing amiss. Once more, then it counts.
			if err != nil && attempt == 1 && bytes.Contains(out, []byte(": terminated")) {
				t.Logf("mcp-inspector %v: %s; trying once more", args, bytes.TrimSpace(out))
				continue
			}
			if err != nil {
				t.Fatalf("mcp-inspector %v: %v\n%s\n%s", args, err, out, s.log())
			}
			return out
		}
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	out := run("--method", "tools/list")
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("inspector output is not JSON: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "write_todolist") {
		t.Fatalf("inspector tools/list = %v", names)
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct{ Text string }
	}
	out = run("--method", "tools/call", "--tool-name", "record_memory", "--tool-arg", "key=BAD", "--tool-arg", "content=x")
	if err := json.Unmarshal(out, &res); err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "key: does not match pattern") {
		t.Fatalf("inspector call with a bad key: %s", out)
	}
}

// TestHTTPUpstreamToolsAndListChanged: upstream tools are served over HTTP
// through the same gate, and a policy change reaches an HTTP client as
// notifications/tools/list_changed: on its subscriptions/listen stream
// (2026-07-28) or its session's GET stream (2025-11-25).
func TestHTTPUpstreamToolsAndListChanged(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			upstreamToolsAndListChanged(t, v)
		})
	}
}

func upstreamToolsAndListChanged(t *testing.T, version string) {
	dir := t.TempDir()
	up := policy.Upstream{Name: "fake", Transport: "stdio", Command: upstreamtest.FakeMCP(t), DiscoveryTimeoutMS: 10000}
	rules := map[string]policy.Rule{"fake__echo": {Permission: policy.Read}, "fake__fail": {Permission: policy.Write}}
	agentsFile, policyFile := upstreamtest.WriteConfigs(t, dir, rules, up)
	s := serveHTTP(t, filepath.Join(dir, "project"), "--http", "127.0.0.1:0", "--agents", agentsFile, "--policy", policyFile)
	changed := make(chan struct{}, 16)
	cs := connectVersion(t, s.URL, nil, func() { changed <- struct{}{} }, version)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	listed := func() map[string]bool {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, tl := range lt.Tools {
			m[tl.Name] = true
		}
		return m
	}
	if l := listed(); !l["fake__echo"] || l["fake__slow"] {
		t.Fatalf("tools/list over HTTP: %v", l)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake__echo", Arguments: map[string]any{"text": "via http"}})
	if err != nil || r.IsError || text(r) != "echo: via http" {
		t.Fatalf("fake__echo over HTTP: %v %+v", err, r)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake__fail", Arguments: map[string]any{}})
	if err != nil || !r.IsError || text(r) != "fake failure: the widget is broken" {
		t.Fatalf("fake__fail over HTTP must pass isError through: %v %+v", err, r)
	}

	// Another client's 2025 session begins and ends (DELETE) on the same
	// endpoint: it must not end this client's stream of changes.
	other := connectVersion(t, s.URL, nil, nil, "2025-11-25")
	if err := other.Close(); err != nil {
		t.Fatalf("closing another client's session: %v", err)
	}

	rules["fake__slow"] = policy.Rule{Permission: policy.Read}
	upstreamtest.WritePolicy(t, policyFile, rules, up)
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatalf("no tools/list_changed over HTTP after the policy changed\n%s", s.log())
	}
	// The client may have read the list between two changes; wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for !listed()["fake__slow"] {
		if time.Now().After(deadline) {
			t.Fatal("fake__slow not listed after the policy allowed it")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
