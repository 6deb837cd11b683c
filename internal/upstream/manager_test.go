package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/all"
)

func testPolicy(ups ...policy.Upstream) *policy.File {
	return &policy.File{Tools: map[string]policy.Rule{
		"fake__echo":        {Permission: policy.Read},
		"fake__pid":         {Permission: policy.Read},
		"fake__write_note":  {Permission: policy.Write},
		"fake__crash":       {Permission: policy.Write},
		"fake__spawn_child": {Permission: policy.Write},
		"web__lookup":       {Permission: policy.Read},
		"web__update":       {Permission: policy.Write},
	}, Upstream: ups}
}

func stdioUp(t *testing.T, env map[string]string) policy.Upstream {
	return policy.Upstream{Name: "fake", Transport: "stdio", Command: fakeMCP(t), Env: env, DiscoveryTimeoutMS: 10000}
}

func httpUp(url string, timeoutMS int) policy.Upstream {
	return policy.Upstream{Name: "web", Transport: "http", URL: url, DiscoveryTimeoutMS: timeoutMS}
}

type harness struct {
	m       *Manager
	reg     *registry.Registry
	changes atomic.Int32
}

func newHarness(t *testing.T, o Options) *harness {
	h := &harness{reg: all.Registry()}
	o.Registry = h.reg
	o.Log = zerolog.New(zerolog.NewTestWriter(t))
	o.OnChange = func() { h.changes.Add(1) }
	h.m = NewManager(o)
	t.Cleanup(h.m.Close)
	return h
}

func (h *harness) start(t *testing.T, f *policy.File) {
	h.m.Apply(f)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.m.WaitReady(ctx)
}

func (h *harness) call(t *testing.T, name, args string) (tool.Result, error) {
	t.Helper()
	e, ok := h.reg.Lookup(name)
	if !ok {
		t.Fatalf("%s is not registered; have %v", name, h.reg.Names())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return e.Tool.Call(ctx, nil, json.RawMessage(args))
}

// status is the named upstream's Status (the zero Status when it is not
// there).
func (h *harness) status(name string) Status {
	for _, s := range h.m.Status() {
		if s.Name == name {
			return s
		}
	}
	return Status{}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDiscoveryAndNaming(t *testing.T) {
	t.Parallel()
	web := startHTTPFake(t, "127.0.0.1:0")
	h := newHarness(t, Options{})
	h.start(t, testPolicy(stdioUp(t, nil), httpUp(web.URL, 2000)))

	names := h.reg.Names()
	builtins := len(all.Tools())
	for i, bt := range all.Tools() {
		if names[i] != bt.Spec().Name {
			t.Fatalf("binding order: position %d is %s, want built-in %s first", i, names[i], bt.Spec().Name)
		}
	}
	long, renamed := ToolName("fake", "a_tool_name_that_is_much_too_long_to_fit_once_the_server_prefix_is_added")
	if !renamed {
		t.Fatal("the long name should need shortening")
	}
	wantUp := []string{"fake__echo", "fake__write_note", "fake__fail", "fake__crash", "fake__pid", "fake__spawn_child",
		"fake__slow", "fake__draft2020", long, "fake__probe", "fake__env", "fake__traceparent", "fake__add_tool", "fake__redescribe", "fake__wedge", "web__lookup", "web__update"}
	got := names[builtins:]
	if strings.Join(sorted(got[:len(got)-2]), ",") != strings.Join(sorted(wantUp[:len(wantUp)-2]), ",") ||
		strings.Join(got[len(got)-2:], ",") != "web__lookup,web__update" {
		t.Fatalf("upstream tools = %v\nwant (stdio first, then http, in policy order) %v", got, wantUp)
	}
	cases := []struct {
		name   string
		source string
		effect tool.Effect
	}{
		{"fake__echo", "mcp:fake", tool.ReadOnly},          // policy read (and upstream annotation ignored either way)
		{"fake__write_note", "mcp:fake", tool.Destructive}, // policy write
		{"fake__slow", "mcp:fake", tool.Destructive},       // unlisted: never read-only
		{"web__lookup", "mcp:web", tool.ReadOnly},
		{"web__update", "mcp:web", tool.Destructive},
	}
	for _, c := range cases {
		e, _ := h.reg.Lookup(c.name)
		if e.Spec.Source != c.source || e.Spec.Effect != c.effect {
			t.Errorf("%s: source %q effect %v, want %q %v", c.name, e.Spec.Source, e.Spec.Effect, c.source, c.effect)
		}
	}
	fake := h.status("fake")
	if fake.State != StateReady || fake.PID == 0 {
		t.Fatalf("fake status = %+v", fake)
	}
	found := false
	for _, ts := range fake.Tools {
		if ts.Upstream == "broken_schema" {
			found = true
			if ts.Served || !strings.Contains(ts.Reason, "input schema") {
				t.Errorf("broken_schema: %+v, want unavailable with a schema reason", ts)
			}
		}
	}
	if !found {
		t.Error("broken_schema missing from the status")
	}
	if _, ok := h.reg.Lookup("fake__broken_schema"); ok {
		t.Error("a tool whose schema does not compile must not be served")
	}
	// A 2020-12 schema is served and still validates its keywords.
	e, _ := h.reg.Lookup("fake__draft2020")
	sch, err := e.Validator()
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Check(map[string]any{"n": "x"}); err == nil {
		t.Error(`draft2020 schema should reject n="x"`)
	}
}

func TestCallsPassResultsThrough(t *testing.T) {
	t.Parallel()
	web := startHTTPFake(t, "127.0.0.1:0")
	h := newHarness(t, Options{})
	h.start(t, testPolicy(stdioUp(t, nil), httpUp(web.URL, 2000)))
	cases := []struct {
		name, tool, args string
		upstreamErr      bool
		want             string
	}{
		{"stdio text and structured", "fake__echo", `{"text":"hi"}`, false, `"echo":"hi"`},
		{"stdio isError", "fake__fail", `{}`, true, `"isError":true`},
		{"http structured", "web__lookup", `{"key":"k1"}`, false, `value-of-k1`},
		{"http text", "web__update", `{"key":"k2","value":"v"}`, false, `updated k2`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := h.call(t, c.tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if r.UpstreamError != c.upstreamErr || !strings.Contains(string(r.Raw), c.want) {
				t.Fatalf("result %s (upstream error %v), want %q, upstream error %v", r.Raw, r.UpstreamError, c.want, c.upstreamErr)
			}
			if c.upstreamErr && !strings.Contains(r.Reason, "widget is broken") {
				t.Errorf("reason %q should carry the upstream's text", r.Reason)
			}
		})
	}
}

func TestOneUpstreamDownAtStart(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	h := newHarness(t, Options{Backoff: Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
	start := time.Now()
	h.start(t, testPolicy(stdioUp(t, nil), httpUp("http://"+addr+"/mcp", 1500)))
	if _, ok := h.reg.Lookup("fake__echo"); !ok {
		t.Fatal("the stdio upstream's tools must be served although the http one is down")
	}
	if time.Since(start) > 12*time.Second {
		t.Errorf("start took %v", time.Since(start))
	}
	if _, ok := h.reg.Lookup("web__lookup"); ok {
		t.Fatal("web is down; its tools cannot be there")
	}
	web := h.status("web")
	if web.State != StateFailed || web.LastError == "" {
		t.Fatalf("web status = %+v, want failed with the error", web)
	}
	before := h.changes.Load()
	startHTTPFake(t, addr)
	eventually(t, "web tools after the server came back", func() bool {
		_, ok := h.reg.Lookup("web__lookup")
		return ok
	})
	if h.changes.Load() == before {
		t.Error("OnChange was not called when web's tools appeared")
	}
	if r, err := h.call(t, "web__lookup", `{"key":"a"}`); err != nil || r.UpstreamError {
		t.Fatalf("call after recovery: %v %s", err, r.Raw)
	}
}

func TestHangingUpstreamBoundedByItsTimeout(t *testing.T) {
	t.Parallel()
	web := startHTTPFake(t, "127.0.0.1:0")
	h := newHarness(t, Options{})
	hang := policy.Upstream{Name: "fake", Transport: "stdio", Command: fakeMCP(t), Env: map[string]string{"FAKEMCP_HANG": "1"}, DiscoveryTimeoutMS: 700}
	start := time.Now()
	h.start(t, testPolicy(hang, httpUp(web.URL, 5000)))
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("WaitReady took %v although the hanging upstream's timeout is 700ms", el)
	}
	if _, ok := h.reg.Lookup("web__lookup"); !ok {
		t.Fatal("web's tools must be served")
	}
	if s := h.status("fake"); s.State != StateFailed || !strings.Contains(s.LastError, "deadline") {
		t.Errorf("fake status = %+v, want failed by its deadline", s)
	}
}

func TestTransportFailuresAreTransient(t *testing.T) {
	t.Parallel()
	web := startHTTPFake(t, "127.0.0.1:0")
	h := newHarness(t, Options{})
	h.start(t, testPolicy(httpUp(web.URL, 2000)))
	web.Unavailable.Store(true)
	pol := testPolicy()
	for _, c := range []struct{ tool, perm string }{{"web__lookup", policy.Read}, {"web__update", policy.Write}} {
		_, err := h.call(t, c.tool, `{"key":"k"}`)
		var te *tool.TransientError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "Service Unavailable") {
			t.Errorf("%s on 503: err = %v, want a tool.TransientError naming the status", c.tool, err)
		}
		e, _ := h.reg.Lookup(c.tool)
		if d := pol.Decide(e.Spec); d.Permission != c.perm {
			t.Errorf("%s: permission %s, want %s (only read tools are retried)", c.tool, d.Permission, c.perm)
		}
	}
	web.Unavailable.Store(false)
	if r, err := h.call(t, "web__lookup", `{"key":"k"}`); err != nil || r.UpstreamError {
		t.Fatalf("after the 503s the upstream must be usable again: %v", err)
	}
}

func TestHTTPHeadersSent(t *testing.T) {
	t.Parallel()
	web := startHTTPFake(t, "127.0.0.1:0")
	h := newHarness(t, Options{})
	up := httpUp(web.URL, 2000)
	up.Headers = map[string]string{"X-Fake-Token": "t0k3n"}
	h.start(t, testPolicy(up))
	if _, err := h.call(t, "web__lookup", `{"key":"k"}`); err != nil {
		t.Fatal(err)
	}
	if got, _ := web.Header.Load().(string); got != "t0k3n" {
		t.Fatalf("configured header not sent: X-Fake-Token=%q", got)
	}
}

func TestStdioRestartAfterCrash(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.start(t, testPolicy(stdioUp(t, nil)))
	pid1 := pidOf(t, h)
	_, err := h.call(t, "fake__crash", `{}`)
	var te *tool.TransientError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "upstream fake failed during tools/call crash") {
		t.Fatalf("crash mid-call: err = %v, want a clear transient error", err)
	}
	pid2 := pidOf(t, h)
	if pid2 == pid1 {
		t.Fatalf("the upstream was not restarted (pid %d both times)", pid1)
	}
	if alive(pid1) {
		t.Errorf("the crashed process %d is still around", pid1)
	}
}

func TestCloseStopsTheProcessGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.start(t, testPolicy(stdioUp(t, nil)))
	leader := pidOf(t, h)
	r, err := h.call(t, "fake__spawn_child", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		StructuredContent struct{ PID int } `json:"structuredContent"`
	}
	_ = json.Unmarshal(r.Raw, &out)
	child := out.StructuredContent.PID
	if child == 0 || !alive(child) {
		t.Fatalf("child not running: %s", r.Raw)
	}
	h.m.Close()
	h.m.Close()
	eventually(t, "upstream and its child gone", func() bool { return !alive(leader) && !alive(child) })
	if _, err := h.call(t, "fake__pid", `{}`); err == nil {
		t.Error("a call after Close must not start the upstream again")
	}
}

func TestPolicyChangeRestartsChangedUpstream(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.start(t, testPolicy(stdioUp(t, nil)))
	pid1 := pidOf(t, h)
	// Same upstream, different env: a new process.
	h.start(t, testPolicy(stdioUp(t, map[string]string{"FAKEMCP_STDERR": "second"})))
	eventually(t, "rediscovery", func() bool { _, ok := h.reg.Lookup("fake__pid"); return ok })
	if pidOf(t, h) == pid1 {
		t.Error("a changed upstream entry must restart the upstream")
	}
	eventually(t, "old process gone", func() bool { return !alive(pid1) })
	// Removed from the policy: its tools go.
	h.start(t, testPolicy())
	if _, ok := h.reg.Lookup("fake__pid"); ok {
		t.Error("tools of a removed upstream must go")
	}
}

func TestUpstreamComesUpLater(t *testing.T) {
	t.Parallel()
	ready := filepath.Join(t.TempDir(), "ready")
	h := newHarness(t, Options{Backoff: Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
	h.start(t, testPolicy(stdioUp(t, map[string]string{"FAKEMCP_READY_FILE": ready})))
	if _, ok := h.reg.Lookup("fake__echo"); ok {
		t.Fatal("the upstream is not ready yet")
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "fake tools after retry", func() bool { _, ok := h.reg.Lookup("fake__echo"); return ok })
}

func pidOf(t *testing.T, h *harness) int {
	t.Helper()
	r, err := h.call(t, "fake__pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		StructuredContent struct{ PID int } `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Raw, &out); err != nil || out.StructuredContent.PID == 0 {
		t.Fatalf("pid result %s: %v", r.Raw, err)
	}
	return out.StructuredContent.PID
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := procs.ReadStat(pid)
	return err == nil && !st.Dead()
}

// BenchmarkUpstreamCall measures one call through the upstream wrapper
// (no engine), per transport.
func BenchmarkUpstreamCall(b *testing.B) {
	web := startHTTPFake(b, "127.0.0.1:0")
	h := &harness{reg: all.Registry()}
	h.m = NewManager(Options{Registry: h.reg, Log: zerolog.Nop()})
	defer h.m.Close()
	h.m.Apply(testPolicy(policy.Upstream{Name: "fake", Transport: "stdio", Command: fakeMCP(b), DiscoveryTimeoutMS: 10000}, httpUp(web.URL, 5000)))
	h.m.WaitReady(context.Background())
	for _, c := range []struct{ name, tool, args string }{
		{"stdio", "fake__echo", `{"text":"x"}`},
		{"http", "web__lookup", `{"key":"k"}`},
	} {
		e, ok := h.reg.Lookup(c.tool)
		if !ok {
			b.Fatalf("%s not registered", c.tool)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Tool.Call(context.Background(), nil, json.RawMessage(c.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRestartWithholdsTools: while a killed upstream waits for its restart
// its tools stay registered but withheld (fault.Unavailable: hidden by
// policy.File.Access, refused by the engine), a call that got through
// anyway is refused without starting a process, and Status says so; once it
// answers again they are served. An HTTP upstream is restarted the same way.
func TestRestartWithholdsTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{Backoff: Backoff{Initial: 3 * time.Second, Max: 3 * time.Second}})
	up := stdioUp(t, nil)
	up.MaxFailures = 1
	pol := testPolicy(up)
	pol.Tools["fake__wedge"] = policy.Rule{Permission: policy.Write}
	h.start(t, pol)
	before := h.changes.Load()
	if _, err := h.call(t, "fake__wedge", `{"mode":"close_stdout"}`); err == nil {
		t.Fatal("close_stdout must fail the call")
	}
	eventually(t, "restarting, its tools withheld", func() bool {
		e, _ := h.reg.Lookup("fake__echo")
		return h.status("fake").State == StateRestarting && e.Spec.Withheld != nil
	})
	e, _ := h.reg.Lookup("fake__echo")
	if w := e.Spec.Withheld; w == nil || w.Kind != fault.Unavailable || !strings.Contains(w.Reason, "being restarted") {
		t.Fatalf("fake__echo while restarting: withheld %+v", w)
	}
	if h.changes.Load() == before {
		t.Error("the clients were not told that the tools went away")
	}
	for _, ts := range h.status("fake").Tools {
		if ts.Name == "fake__echo" && (ts.Served || ts.Withheld != "unavailable") {
			t.Errorf("status of fake__echo while restarting: %+v", ts)
		}
	}
	_, err := e.Tool.Call(context.Background(), nil, json.RawMessage(`{"text":"x"}`))
	var rej fault.Rejection
	if !errors.As(err, &rej) || rej.RejectionKind() != fault.Unavailable || h.status("fake").PID != 0 {
		t.Fatalf("a call during the backoff: %v (pid %d); want an unavailable rejection and no process", err, h.status("fake").PID)
	}
	eventually(t, "served again", func() bool {
		e, ok := h.reg.Lookup("fake__echo")
		return ok && e.Spec.Withheld == nil
	})
	if r, err := h.call(t, "fake__echo", `{"text":"back"}`); err != nil || !strings.Contains(string(r.Raw), "echo: back") {
		t.Fatalf("after the restart: %v %s", err, r.Raw)
	}
}

// TestHTTPUpstreamReconnectedAfterTimeouts: an HTTP upstream whose calls
// time out is dropped and discovered again after max_failures; a 503 (the
// server answering that it is busy) is not a failure.
func TestHTTPUpstreamReconnectedAfterTimeouts(t *testing.T) {
	t.Parallel()
	web := startHTTPFake(t, "127.0.0.1:0")
	h := newHarness(t, Options{Backoff: Backoff{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond}})
	up := httpUp(web.URL, 2000)
	h.start(t, testPolicy(up))
	web.Unavailable.Store(true)
	for range 3 {
		if _, err := h.call(t, "web__lookup", `{"key":"k"}`); err == nil {
			t.Fatal("503 must fail the call")
		}
	}
	if s := h.status("web"); s.State != StateReady || s.Failures != 0 {
		t.Fatalf("after three 503s: %+v; a busy server is not a failed one", s)
	}
	web.Unavailable.Store(false)
	e, _ := h.reg.Lookup("web__lookup")
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		_, _ = e.Tool.Call(ctx, nil, json.RawMessage(`{"key":"k"}`))
		cancel()
	}
	eventually(t, "rediscovered", func() bool { s := h.status("web"); return s.State == StateReady && s.Attempts == 2 })
	if _, err := h.call(t, "web__lookup", `{"key":"k"}`); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptPinsWithholdEverything: pins that cannot be read fail closed:
// every tool of the upstream is withheld (and audited) and the file is
// left for a human to repair; once it is repaired the tools are pinned and
// served.
func TestCorruptPinsWithholdEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, PinsPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rows []*audit.Row
	var mu sync.Mutex
	h := newHarness(t, Options{Pins: newPins(t, dir), Audit: func(r *audit.Row) { mu.Lock(); rows = append(rows, r); mu.Unlock() }})
	h.start(t, testPolicy(stdioUp(t, nil)))
	e, ok := h.reg.Lookup("fake__echo")
	if !ok || e.Spec.Withheld == nil || e.Spec.Withheld.Kind != fault.Pin || !strings.Contains(e.Spec.Withheld.Reason, "cannot be checked") {
		t.Fatalf("fake__echo with corrupt pins: %+v", e.Spec.Withheld)
	}
	mu.Lock()
	n := len(rows)
	mu.Unlock()
	if n == 0 || rows[0].Status != audit.StatusPin || rows[0].Pin.Action != audit.PinWithheld {
		t.Fatalf("audit rows: %d %+v", n, rows)
	}
	if b, _ := os.ReadFile(path); string(b) != "{not json" {
		t.Fatalf("the corrupt pins were rewritten: %s", b)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.m.RefreshPins()
	if e, _ := h.reg.Lookup("fake__echo"); e.Spec.Withheld != nil {
		t.Fatalf("after the repair: %+v", e.Spec.Withheld)
	}
}

// TestWithheldReasonIsToolhostsWords: the error behind an upstream's
// failure (a dial error names addresses, a transport error anything) goes
// to the log and the operator's status, never into the reason of the
// withheld tools the model reads.
func TestWithheldReasonIsToolhostsWords(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{Backoff: Backoff{Initial: time.Minute, Max: time.Minute}})
	up := stdioUp(t, nil)
	up.MaxFailures = 1
	h.start(t, testPolicy(up))
	h.m.mu.Lock()
	s := h.m.servers["fake"]
	h.m.mu.Unlock()
	planted := errors.New("dial tcp 10.1.2.3:443: PLANTED-SECRET token=hunter2")
	h.m.failed(s, "could not connect", planted)
	eventually(t, "withheld", func() bool { e, _ := h.reg.Lookup("fake__echo"); return e.Spec.Withheld != nil })
	e, _ := h.reg.Lookup("fake__echo")
	if w := e.Spec.Withheld.Reason; !strings.Contains(w, "(the last: could not connect)") || strings.Contains(w, "PLANTED") || strings.Contains(w, "10.1.2.3") {
		t.Fatalf("withheld reason %q; want toolhost's words only", w)
	}
	if st := h.status("fake"); !strings.Contains(st.LastError, "PLANTED-SECRET") {
		t.Fatalf("the operator's status lost the error: %+v", st)
	}
}
