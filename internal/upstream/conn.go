package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/webguard"
)

// A stdio upstream that toolhost stops has exitWait to exit after its
// stdin is closed (MCP's shutdown), then stopGrace between SIGTERM and
// SIGKILL to its group; at shutdown never past the session's deadline
// (Manager.ShutdownBy), so a wedged server cannot hold toolhost's exit.
const (
	exitWait  = time.Second
	stopGrace = time.Second
)

// Spawner starts child processes: the session's process owner (procs).
type Spawner interface {
	Spawn(spec procs.Spec) (*procs.Child, error)
}

// hooks tell the manager how the upstream behaves.
type hooks struct {
	// listChanged runs (in its own goroutine) when the upstream says its
	// tool list changed.
	listChanged func()
	// failed: a call timed out, the connection was lost or could not be
	// made, or a health probe failed. why is toolhost's own words (the
	// model may read them in a withheld tool's reason); err, when set, is
	// the error behind it, for the log and the operator's status only.
	failed func(why string, err error)
	// answered: the upstream answered a call or a probe.
	answered func()
}

// conn is the client side of one upstream: one live MCP session at a time,
// made on demand and made again after it broke.
type conn struct {
	cfg     policy.Upstream
	log     zerolog.Logger
	version string
	procs   Spawner
	hooks   hooks
	// projectDir is what the sandbox's relative paths are relative to.
	projectDir string

	mu  sync.Mutex
	cur *live // nil when no session is live
	// closed ends the conn for good; suspended (why) refuses new sessions
	// while the manager restarts the server.
	closed    bool
	suspended string
	inflight  int
	lastUse   time.Time

	// stops counts the broken sessions still being stopped.
	stops sync.WaitGroup
}

// live is one session and, for stdio, its process.
type live struct {
	sess  *mcp.ClientSession
	child *procs.Child // nil for http
	stdin *os.File     // the write end of the child's stdin
}

// errClosed is a call that arrived after toolhost stopped the upstream.
var errClosed = errors.New("upstream stopped")

// unavailableError is a call that reached a server toolhost is restarting:
// nothing was sent, a later call may succeed.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string             { return e.msg }
func (e *unavailableError) RejectionKind() fault.Kind { return fault.Unavailable }

func newConn(cfg policy.Upstream, log zerolog.Logger, version, projectDir string, sp Spawner, h hooks) *conn {
	return &conn{cfg: cfg, log: log.With().Str("upstream", cfg.Name).Logger(), version: version, projectDir: projectDir, procs: sp, hooks: h}
}

// session returns the live session, connecting (and for stdio starting the
// process) when there is none.
func (c *conn) session(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil {
		return c.cur.sess, nil
	}
	if c.closed {
		return nil, errClosed
	}
	if c.suspended != "" {
		return nil, &unavailableError{msg: c.suspended}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost", Version: c.version}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		// Not inline: the handler runs on the session's read loop, and
		// listing tools needs that loop to read the answer.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go c.hooks.listChanged() },
	})
	var t mcp.Transport
	var child *procs.Child
	var stdin *os.File
	switch c.cfg.Transport {
	case "stdio":
		var err error
		if child, stdin, t, err = c.start(); err != nil {
			return nil, err
		}
	default:
		hc, err := httpClient(c.cfg)
		if err != nil {
			return nil, err
		}
		// No standalone SSE stream: toolhost only needs answers to its own
		// requests, and a hanging GET would outlive a dead server. No
		// transport-level retries: the engine decides what is retried.
		t = &mcp.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	}
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		if child != nil {
			// Nothing was served yet: no reason to wait for it.
			killChild(child, c.log)
			stdin.Close()
		}
		return nil, err
	}
	c.cur = &live{sess: sess, child: child, stdin: stdin}
	if child != nil {
		c.log.Info().Str("event", "upstream_started").Int("pid", child.PID).Str("command", c.cfg.Command).Msg("upstream process started")
	}
	go c.watch(sess)
	return sess, nil
}

// watch notices a session that ended on its own (the process exited or
// closed its stdout, the connection dropped): a failure, and what is left
// of the process group is killed.
func (c *conn) watch(sess *mcp.ClientSession) {
	err := sess.Wait()
	l := c.forget(sess)
	if l == nil {
		return
	}
	defer c.stops.Done()
	why := "the session ended"
	if child := l.child; child != nil {
		why = "the process exited or closed its stdout"
		select {
		case <-child.Exited():
		default:
			why = "the process closed its stdout but is still running"
		}
		c.log.Warn().Str("event", "upstream_exited").Int("pid", child.PID).AnErr("wait", err).
			Msg("upstream session ended: " + why)
	} else {
		c.log.Warn().Str("event", "upstream_disconnected").AnErr("wait", err).Msg("upstream session ended")
	}
	c.hooks.failed(why, err)
	c.stopNow(l)
}

// forget detaches sess if it is the live session (any, for nil) and
// returns it; the caller then owns its stop, which c.stops counts.
func (c *conn) forget(sess *mcp.ClientSession) *live {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.cur
	if l == nil || (sess != nil && l.sess != sess) {
		return nil
	}
	c.cur = nil
	c.stops.Add(1)
	return l
}

// start runs a stdio upstream through the process owner (its own process
// group, stopped with toolhost even after SIGKILL), confined by the kernel
// to its entry's sandbox, and returns the transport over its stdin and
// stdout. Its stderr goes to the log.
func (c *conn) start() (*procs.Child, *os.File, mcp.Transport, error) {
	path, err := exec.LookPath(c.cfg.Command)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("upstream %s: command %q: %w", c.cfg.Name, c.cfg.Command, err)
	}
	plan, err := c.confine()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("upstream %s: %w", c.cfg.Name, err)
	}
	defer plan.Close()
	spec := plan.Command("upstream "+c.cfg.Name, append([]string{path}, c.cfg.Args...), "")
	spec.Grace = stopGrace
	child, p, err := procs.SpawnPiped(c.procs.Spawn, spec)
	if err != nil {
		plan.RemoveTempDir()
		return nil, nil, nil, err
	}
	go func() {
		<-child.Done()
		plan.RemoveTempDir()
	}()
	c.log.Info().Str("event", "upstream_sandbox").Int("pid", child.PID).Str("sandbox", plan.String()).Msg("upstream process confined")
	go func() {
		_, _ = io.Copy(&lineLog{log: c.log}, p.Stderr)
		p.Stderr.Close()
	}()
	return child, p.Stdin, &mcp.IOTransport{Reader: p.Stdout, Writer: p.Stdin}, nil
}

// confine prepares the confinement of the server's process from its
// entry's sandbox: relative paths are the project's (the current directory
// without one), its private temp dir is named for this process.
func (c *conn) confine() (*confine.Plan, error) {
	// With a project, the server is in its live registry while any process
	// of it runs (the hook reads it); without one, no hook checks writes.
	dir, hold := c.projectDir, confine.HoldKeep
	if dir == "" {
		hold = confine.HoldNone
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		dir = wd
	}
	self, err := procs.Self()
	if err != nil {
		return nil, err
	}
	set := make([]string, 0, len(c.cfg.Env))
	for _, k := range slices.Sorted(maps.Keys(c.cfg.Env)) {
		set = append(set, k+"="+c.cfg.Env[k])
	}
	return confine.Prepare(confine.Request{
		Agent: "upstream " + c.cfg.Name, Sandbox: c.cfg.Sandbox.Agent(), ProjectDir: dir,
		TempFor: &self, Kind: confine.KindUpstream, SetEnv: set, Hold: hold,
	})
}

// listTools returns every tool the upstream offers (all pages).
func (c *conn) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	var tools []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			c.drop(sess, "tools/list failed", err)
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// use counts a call in flight (+1) or ended (-1), for the idle probe.
func (c *conn) use(d int) {
	c.mu.Lock()
	c.inflight += d
	c.lastUse = time.Now()
	c.mu.Unlock()
}

// call runs one tools/call: the one place where toolhost sends a request
// to an upstream tool. A failure to reach the upstream or a connection
// lost during the call is a tool.TransientError (the engine retries it for
// read tools only); an error the upstream answered with is not. A timeout
// or a lost connection counts as a failure of the upstream.
func (c *conn) call(ctx context.Context, remote string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c.use(1)
	defer c.use(-1)
	sess, err := c.session(ctx)
	if err != nil {
		var un *unavailableError
		if errors.As(err, &un) || ctx.Err() != nil {
			return nil, err
		}
		c.hooks.failed("could not connect", err)
		return nil, tool.Transient(fault.Wrap(err, "upstream %s is not reachable", c.cfg.Name))
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	params := &mcp.CallToolParams{Name: remote, Arguments: args}
	// The trace continues at the upstream: its span is a child of the
	// engine's span of this call (MCP carries the context in _meta).
	if tp, ts := trace.Context(ctx); tp != "" {
		params.Meta = mcp.Meta{"traceparent": tp}
		if ts != "" {
			params.Meta["tracestate"] = ts
		}
	}
	res, err := sess.CallTool(ctx, params)
	if err == nil {
		c.hooks.answered()
		return res, nil
	}
	var wire *jsonrpc.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		c.hooks.failed("tools/call "+remote+" timed out", nil)
		return nil, err
	case ctx.Err() != nil:
		return nil, err
	case errors.As(err, &wire) && wire.Code == codeRejected:
		// An HTTP 5xx/429 or a refused request: the session itself is fine.
		return nil, tool.Transient(fault.Wrap(err, "upstream %s could not serve tools/call %s: it rejected the request (an HTTP error status such as 503 or 429) or it could not be delivered; call again later", c.cfg.Name, remote))
	case errors.As(err, &wire):
		// The upstream wrote its error message for its client, the model.
		c.hooks.answered()
		return nil, fault.Safef("upstream %s refused tools/call %s: %s (code %d)", c.cfg.Name, remote, wire.Message, wire.Code)
	}
	c.drop(sess, "connection lost during tools/call "+remote, err)
	next := "toolhost reconnects on the next call"
	if c.cfg.Transport == "stdio" {
		next = "its process is started again on the next call"
	}
	return nil, tool.Transient(fault.Wrap(err, "upstream %s failed during tools/call %s: the connection was lost; %s", c.cfg.Name, remote, next))
}

// probe pings the live session when no call used it for idle: a health
// check that reports like a call. Without a live session there is nothing
// to probe (the next call starts one).
func (c *conn) probe(ctx context.Context, idle time.Duration) {
	c.mu.Lock()
	l := c.cur
	busy := c.inflight > 0 || time.Since(c.lastUse) < idle
	c.mu.Unlock()
	if l == nil || busy {
		return
	}
	sess := l.sess
	err := sess.Ping(ctx, nil)
	var wire *jsonrpc.Error
	switch {
	case err == nil, errors.As(err, &wire) && wire.Code != codeRejected:
		c.hooks.answered()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		c.hooks.failed("ping not answered", nil)
	case ctx.Err() != nil:
	default:
		c.drop(sess, "ping failed", err)
	}
}

// codeRejected is the go-sdk's "rejected by transport" (an HTTP error
// status such as 503, or a request the transport could not deliver), as
// opposed to an error the upstream server answered with.
const codeRejected = -32005

// drop forgets a broken session (a failure: why and the error behind it,
// as hooks.failed takes them) and kills what is left of it; the next call
// makes a new one.
func (c *conn) drop(sess *mcp.ClientSession, why string, err error) {
	l := c.forget(sess)
	if l == nil {
		return
	}
	c.hooks.failed(why, err)
	go func() {
		defer c.stops.Done()
		c.stopNow(l)
	}()
}

// suspend refuses new sessions (why is what a call is told) until resume;
// the live one is left to reset.
func (c *conn) suspend(why string) {
	c.mu.Lock()
	c.suspended = why
	c.mu.Unlock()
}

// reset kills the live session, if any, with its process group.
func (c *conn) reset() {
	if l := c.forget(nil); l != nil {
		defer c.stops.Done()
		c.stopNow(l)
	}
}

func (c *conn) resume() {
	c.mu.Lock()
	c.suspended = ""
	c.mu.Unlock()
}

// stopNow ends a session that failed: a stdio upstream's whole process
// group is killed at once (SIGTERM and, without waiting, SIGKILL), since a
// wedged server cannot be asked to leave.
func (c *conn) stopNow(l *live) {
	if l.child != nil {
		killChild(l.child, c.log)
	}
	closeBounded(l.sess, stopGrace)
}

func killChild(child *procs.Child, log zerolog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := child.Stop(ctx)
	if err != nil {
		log.Error().Str("event", "upstream_kill_failed").Int("pid", child.PID).Err(err).Msg("upstream process group not stopped")
		return
	}
	if len(rep.Members) > 0 {
		log.Warn().Str("event", "upstream_killed").Int("pid", child.PID).Ints("members", rep.Members).Msg("upstream process group killed")
	}
}

// close ends the session politely and, for stdio, stops the whole process
// group by deadline: stdin closed (MCP's shutdown) and exitWait (at most
// half the time left) to exit, then SIGTERM and SIGKILL by the deadline. final ends the conn
// for good (no new session after it) and waits for the stops of broken
// sessions. Safe to call twice.
func (c *conn) close(final bool, deadline time.Time) {
	c.mu.Lock()
	c.closed = c.closed || final
	c.mu.Unlock()
	if l := c.forget(nil); l != nil {
		func() {
			defer c.stops.Done()
			c.stopBy(l, deadline)
		}()
		if l.child != nil {
			c.log.Info().Str("event", "upstream_stopped").Int("pid", l.child.PID).Msg("upstream process group stopped")
		}
	}
	if final {
		c.stops.Wait()
	}
}

func (c *conn) stopBy(l *live, deadline time.Time) {
	if l.child == nil {
		closeBounded(l.sess, time.Until(deadline))
		return
	}
	// The session's Close waits for the requests in flight; closing stdin
	// is what asks the server to leave.
	_ = l.stdin.Close()
	select {
	case <-l.child.Exited():
	case <-time.After(min(exitWait, time.Until(deadline)/2)):
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	if _, err := l.child.Stop(ctx); err != nil {
		c.log.Error().Str("event", "upstream_kill_failed").Int("pid", l.child.PID).Err(err).Msg("upstream process group not stopped")
	}
	cancel()
	closeBounded(l.sess, stopGrace)
}

// pid is the running stdio upstream's pid (0 when none runs).
func (c *conn) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || c.cur.child == nil {
		return 0
	}
	return c.cur.child.PID
}

// closeBounded closes a session, waiting at most d for it (it waits for
// the requests in flight, which end once the process is gone).
func closeBounded(sess *mcp.ClientSession, d time.Duration) {
	done := make(chan struct{})
	go func() { _ = sess.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// httpClient is the client for an http upstream: its configured headers on
// every request, and no proxy at all for a loopback address (a proxy from
// the environment cannot reach 127.0.0.1 of this machine).
func httpClient(cfg policy.Upstream) (*http.Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %s: url %q must be an absolute http(s) URL", cfg.Name, cfg.URL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if webguard.IsLoopbackHost(u.Hostname()) {
		tr.Proxy = nil
	}
	return &http.Client{Transport: &headerTransport{base: tr, headers: cfg.Headers}}, nil
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

// RoundTrip sets the configured headers and, for a request made within a
// traced call, the W3C traceparent and tracestate headers.
func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tp, ts := trace.Context(r.Context())
	if len(h.headers) > 0 || tp != "" {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
		if tp != "" {
			r.Header.Set("traceparent", tp)
			if ts != "" {
				r.Header.Set("tracestate", ts)
			}
		}
	}
	return h.base.RoundTrip(r)
}

// lineLog writes a stdio upstream's stderr into the log, one event per line.
type lineLog struct {
	log zerolog.Logger
	mu  sync.Mutex
	buf []byte
}

const maxLogLine = 8 << 10

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxLogLine {
				l.emit(l.buf[:maxLogLine])
				l.buf = l.buf[maxLogLine:]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLog) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) > 0 {
		l.log.Info().Str("event", "upstream_stderr").Str("line", string(line)).Send()
	}
}
