package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

func startServe(t *testing.T, project, agentsFile, policyFile string, env ...string) *stdioclient.Client {
	t.Helper()
	return testutil.ServeEnv(t, append(os.Environ(), env...), "--agent", "pm", "--project-dir", project,
		"--agents", agentsFile, "--policy", policyFile, "--grace", "2s")
}

func listNames(t *testing.T, c *stdioclient.Client) map[string]json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := c.Call(ctx, "tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, tl := range res.Tools {
		var e struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(tl, &e)
		out[e.Name] = tl
	}
	return out
}

func waitListChanged(t *testing.T, c *stdioclient.Client, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case n := <-c.Notifications():
			if n.Method == "notifications/tools/list_changed" {
				return
			}
		case <-deadline:
			t.Fatalf("no notifications/tools/list_changed within %v\n%s", within, c.Stderr())
		}
	}
}

// drainNotifications drops the notifications received so far.
func drainNotifications(c *stdioclient.Client) {
	for {
		select {
		case <-c.Notifications():
		default:
			return
		}
	}
}

// waitListed waits for a tools/list_changed notification, then until name
// is listed (several changes may be announced by one notification).
func waitListed(t *testing.T, c *stdioclient.Client, name string) {
	t.Helper()
	waitListChanged(t, c, 20*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := listNames(t, c)[name]; ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never listed after tools/list_changed\n%s", name, c.Stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type auditRow struct {
	Tool, Source, Status, Error string
	ErrorKind                   string `json:"error_kind"`
	RetryCount                  int    `json:"retry_count"`
}

func auditRows(t *testing.T, project string) []auditRow {
	t.Helper()
	f, err := os.Open(filepath.Join(project, ".toolhost", "audit.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []auditRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r auditRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return rows
}

var e2eRules = map[string]policy.Rule{
	"fake__echo": {Permission: policy.Read}, "fake__fail": {Permission: policy.Write},
	"fake__crash": {Permission: policy.Write}, "fake__pid": {Permission: policy.Read},
	"fake__spawn_child": {Permission: policy.Write},
	"fake__add_tool":    {Permission: policy.Write}, "fake__extra_one": {Permission: policy.Read},
	"web__lookup": {Permission: policy.Read}, "web__update": {Permission: policy.Write},
}

// TestServeAggregatesUpstreams drives the real binary over stdio with both
// upstreams configured, the http one down at start, and every proxy variable
// pointing at a dead port (loopback upstreams must ignore them).
func TestServeAggregatesUpstreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	webAddr := freeAddr(t)
	dead := "http://" + freeAddr(t)
	// trust-new: the tool the server adds at run time is served at once
	// (TestServePinnedDefinitions covers the default, which withholds it).
	agentsFile, policyFile := writeConfigs(t, dir, e2eRules,
		policy.Upstream{Name: "fake", Transport: "stdio", Command: fakeMCP(t), DiscoveryTimeoutMS: 10000, Pin: policy.PinTrustNew},
		policy.Upstream{Name: "web", Transport: "http", URL: "http://" + webAddr + "/mcp", DiscoveryTimeoutMS: 1500})
	c := startServe(t, project, agentsFile, policyFile,
		"HTTP_PROXY="+dead, "HTTPS_PROXY="+dead, "http_proxy="+dead, "https_proxy="+dead, "ALL_PROXY="+dead, "NO_PROXY=", "no_proxy=")

	tools := listNames(t, c)
	for _, want := range []string{"write_todolist", "fake__echo", "fake__pid", "fake__crash"} {
		if _, ok := tools[want]; !ok {
			t.Fatalf("tools/list misses %s (the http upstream being down must not matter); have %d tools", want, len(tools))
		}
	}
	if _, ok := tools["web__lookup"]; ok {
		t.Fatal("web is down; web__lookup cannot be listed yet")
	}
	if _, ok := tools["fake__slow"]; ok {
		t.Error("fake__slow is not in the policy; it must not be listed")
	}
	var echo struct {
		Annotations struct {
			ReadOnlyHint    bool `json:"readOnlyHint"`
			DestructiveHint bool `json:"destructiveHint"`
		} `json:"annotations"`
	}
	_ = json.Unmarshal(tools["fake__crash"], &echo)
	if echo.Annotations.ReadOnlyHint || !echo.Annotations.DestructiveHint {
		t.Errorf("fake__crash is write in the policy: annotations %s", tools["fake__crash"])
	}

	t.Run("unlisted upstream tool is denied", func(t *testing.T) {
		r := testutil.CallTool(t, c, "fake__slow", map[string]any{"ms": 1})
		if !r.IsError || !strings.Contains(r.Text(), "not listed in the tool policy") {
			t.Fatalf("fake__slow: %+v", r)
		}
	})
	t.Run("validation against the upstream schema", func(t *testing.T) {
		r := testutil.CallTool(t, c, "fake__echo", map[string]any{"text": ""})
		if !r.IsError || !strings.Contains(r.Text(), "text") {
			t.Fatalf("empty text must fail minLength: %+v", r)
		}
	})
	t.Run("results pass through", func(t *testing.T) {
		r := testutil.CallTool(t, c, "fake__echo", map[string]any{"text": "hello"})
		if r.IsError || r.Text() != "echo: hello" || !strings.Contains(string(r.StructuredContent), `"echo":"hello"`) {
			t.Fatalf("fake__echo: %+v %s", r, r.StructuredContent)
		}
		r = testutil.CallTool(t, c, "fake__fail", map[string]any{})
		if !r.IsError || r.Text() != "fake failure: the widget is broken" {
			t.Fatalf("fake__fail must pass the upstream's isError result through: %+v", r)
		}
	})
	t.Run("killed mid-call", func(t *testing.T) {
		r := testutil.CallTool(t, c, "fake__crash", map[string]any{})
		if !r.IsError || !strings.Contains(r.Text(), "upstream fake failed during tools/call crash") {
			t.Fatalf("fake__crash: %+v", r)
		}
		r = testutil.CallTool(t, c, "fake__pid", map[string]any{})
		if r.IsError {
			t.Fatalf("the next call must restart the upstream: %+v", r)
		}
	})
	t.Run("upstream list_changed is followed", func(t *testing.T) {
		if _, ok := listNames(t, c)["fake__extra_one"]; ok {
			t.Fatal("fake__extra_one does not exist yet")
		}
		drainNotifications(c)
		if r := testutil.CallTool(t, c, "fake__add_tool", map[string]any{"suffix": "one"}); r.IsError {
			t.Fatalf("fake__add_tool: %+v", r)
		}
		waitListed(t, c, "fake__extra_one")
		if r := testutil.CallTool(t, c, "fake__extra_one", map[string]any{}); r.IsError || r.Text() != "extra_one here" {
			t.Fatalf("fake__extra_one: %+v", r)
		}
	})
	t.Run("http upstream comes back", func(t *testing.T) {
		drainNotifications(c)
		startHTTPFake(t, webAddr)
		waitListed(t, c, "web__lookup")
		r := testutil.CallTool(t, c, "web__lookup", map[string]any{"key": "k"})
		if r.IsError || !strings.Contains(string(r.StructuredContent), "value-of-k") {
			t.Fatalf("web__lookup through dead proxies: %+v\n%s", r, c.Stderr())
		}
	})

	rows := auditRows(t, project)
	want := map[string]auditRow{
		"fake__slow":  {Source: "mcp:fake", Status: "rejected", ErrorKind: "policy"},
		"fake__fail":  {Source: "mcp:fake", Status: "error", ErrorKind: "upstream"},
		"fake__crash": {Source: "mcp:fake", Status: "error"},
		"web__lookup": {Source: "mcp:web", Status: "ok"},
	}
	for name, w := range want {
		found := false
		for _, r := range rows {
			if r.Tool == name && r.Source == w.Source && r.Status == w.Status && (w.ErrorKind == "" || r.ErrorKind == w.ErrorKind) {
				found = true
			}
		}
		if !found {
			t.Errorf("no audit row %s %+v in %+v", name, w, rows)
		}
	}
}

// TestServePolicyChange: editing the policy file changes the listed tools
// and the client is told.
func TestServePolicyChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	up := policy.Upstream{Name: "fake", Transport: "stdio", Command: fakeMCP(t), DiscoveryTimeoutMS: 10000}
	agentsFile, policyFile := writeConfigs(t, dir, e2eRules, up)
	c := startServe(t, filepath.Join(dir, "project"), agentsFile, policyFile)
	if _, ok := listNames(t, c)["fake__slow"]; ok {
		t.Fatal("fake__slow is not in the policy yet")
	}
	rules := map[string]policy.Rule{"fake__slow": {Permission: policy.Read, TimeoutMS: 5000}}
	for k, v := range e2eRules {
		rules[k] = v
	}
	drainNotifications(c)
	writePolicy(t, policyFile, rules, up)
	waitListed(t, c, "fake__slow")
	tools := listNames(t, c)
	if !strings.Contains(string(tools["fake__slow"]), `"readOnlyHint":true`) {
		t.Errorf("fake__slow is read in the new policy: %s", tools["fake__slow"])
	}
	if r := testutil.CallTool(t, c, "fake__slow", map[string]any{"ms": 1}); r.IsError {
		t.Fatalf("fake__slow: %+v", r)
	}
}

// TestServeExitStopsUpstreamGroup: when toolhost exits, the stdio upstream
// and the processes it started are gone.
func TestServeExitStopsUpstreamGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agentsFile, policyFile := writeConfigs(t, dir, e2eRules,
		policy.Upstream{Name: "fake", Transport: "stdio", Command: fakeMCP(t), DiscoveryTimeoutMS: 10000,
			Env: map[string]string{"FAKEMCP_STDERR": "fake says hello on stderr"}})
	c := startServe(t, filepath.Join(dir, "project"), agentsFile, policyFile)
	listNames(t, c) // a client lists before it calls; the list waits for discovery
	pidOfResult := func(r *stdioclient.ToolResult) int {
		var v struct{ PID int }
		if r.IsError || json.Unmarshal(r.StructuredContent, &v) != nil || v.PID == 0 {
			t.Fatalf("no pid in %+v", r)
		}
		return v.PID
	}
	leader := pidOfResult(testutil.CallTool(t, c, "fake__pid", map[string]any{}))
	child := pidOfResult(testutil.CallTool(t, c, "fake__spawn_child", map[string]any{}))
	if !alive(leader) || !alive(child) {
		t.Fatal("upstream or its child not running")
	}
	if err := c.Close(15 * time.Second); err != nil {
		t.Fatalf("toolhost did not exit cleanly: %v\n%s", err, c.Stderr())
	}
	eventually(t, "upstream group gone after toolhost exited", func() bool { return !alive(leader) && !alive(child) })
	if !strings.Contains(c.Stderr(), `"upstream":"fake","event":"upstream_stderr","line":"fake says hello on stderr"`) {
		t.Errorf("the upstream's stderr is not in the log:\n%s", c.Stderr())
	}
	if !strings.Contains(c.Stderr(), `"event":"upstream_stopped"`) {
		t.Errorf("no upstream_stopped in the log:\n%s", c.Stderr())
	}
}

// TestServe503 checks what the gate does with an upstream 503: a write tool
// is never called twice; a read tool is retried (the engine retries
// tool.TransientError for read tools) and succeeds on its second attempt,
// audited with retry_count 1.
func TestServe503(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	web := startHTTPFake(t, "127.0.0.1:0")
	rules := map[string]policy.Rule{
		"web__lookup": {Permission: policy.Read, MaxRetries: 2},
		"web__update": {Permission: policy.Write, MaxRetries: 2},
	}
	agentsFile, policyFile := writeConfigs(t, dir, rules, policy.Upstream{Name: "web", Transport: "http", URL: web.URL})
	c := startServe(t, project, agentsFile, policyFile)
	listNames(t, c) // a client lists before it calls; the list waits for discovery

	before := web.Calls.Load()
	web.FailNext.Store(1)
	r := testutil.CallTool(t, c, "web__update", map[string]any{"key": "k", "value": "v"})
	if !r.IsError || !strings.Contains(r.Text(), "upstream web could not serve tools/call update: it rejected the request") || strings.Contains(r.Text(), "Service Unavailable") {
		t.Fatalf("web__update on 503: %+v", r)
	}
	if n := web.Calls.Load() - before; n != 1 {
		t.Fatalf("a write tool reached the upstream %d times on a 503; it must never be retried", n)
	}

	before = web.Calls.Load()
	web.FailNext.Store(1)
	r = testutil.CallTool(t, c, "web__lookup", map[string]any{"key": "k"})
	calls := web.Calls.Load() - before
	rows := auditRows(t, project)
	row := rows[len(rows)-1]
	if row.Tool != "web__lookup" || calls != 2 || row.RetryCount != 1 || row.Status != "ok" {
		t.Fatalf("web__lookup after one 503: upstream saw %d call(s), audit row %+v; want 2 calls, retry_count 1, ok", calls, row)
	}
	if r.IsError {
		t.Fatalf("a retried read after one 503 must succeed: %+v", r)
	}
}
