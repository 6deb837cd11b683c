package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
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

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/trace"
)

// stopGrace is how long a stdio upstream may take to exit after its stdin
// is closed before its process group is stopped (SIGTERM, the same grace
// again, SIGKILL).
const stopGrace = 2 * time.Second

// Spawner starts child processes: the session's process owner (procs).
type Spawner interface {
	Spawn(spec procs.Spec) (*procs.Child, error)
}

// conn is the client side of one upstream: one live MCP session at a time,
// made on demand and made again after it broke.
type conn struct {
	cfg     policy.Upstream
	log     zerolog.Logger
	version string
	procs   Spawner
	// onListChanged runs (in its own goroutine) when the upstream says its
	// tool list changed.
	onListChanged func()

	mu     sync.Mutex
	sess   *mcp.ClientSession
	child  *procs.Child // the process of a stdio upstream; nil when none runs
	closed bool
}

// errClosed is a call that arrived after toolhost stopped the upstream.
var errClosed = errors.New("upstream stopped")

func newConn(cfg policy.Upstream, log zerolog.Logger, version string, sp Spawner, onListChanged func()) *conn {
	return &conn{cfg: cfg, log: log.With().Str("upstream", cfg.Name).Logger(), version: version, procs: sp, onListChanged: onListChanged}
}

// session returns the live session, connecting (and for stdio starting the
// process) when there is none.
func (c *conn) session(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		return c.sess, nil
	}
	if c.closed {
		return nil, errClosed
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost", Version: c.version}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		// Not inline: the handler runs on the session's read loop, and
		// listing tools needs that loop to read the answer.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go c.onListChanged() },
	})
	var t mcp.Transport
	var child *procs.Child
	switch c.cfg.Transport {
	case "stdio":
		var err error
		if child, t, err = c.start(); err != nil {
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
			_, _ = child.Stop(context.Background())
		}
		return nil, err
	}
	c.sess, c.child = sess, child
	if child != nil {
		c.log.Info().Str("event", "upstream_started").Int("pid", child.PID).Str("command", c.cfg.Command).Msg("upstream process started")
	}
	go c.watch(sess, child)
	return sess, nil
}

// watch notices a session that ended on its own (the process exited, the
// connection dropped) so the next call starts a new one.
func (c *conn) watch(sess *mcp.ClientSession, child *procs.Child) {
	err := sess.Wait()
	c.mu.Lock()
	mine := c.sess == sess
	if mine {
		c.sess, c.child = nil, nil
	}
	c.mu.Unlock()
	if !mine {
		return
	}
	if child != nil {
		// The session ends when the process closes its stdout; procs stops
		// what the leader left in its group once the leader exits.
		closeSession(sess, child)
		c.log.Warn().Str("event", "upstream_exited").Int("pid", child.PID).AnErr("wait", err).
			Msg("upstream process exited; it is started again on the next call")
		return
	}
	c.log.Warn().Str("event", "upstream_disconnected").AnErr("wait", err).Msg("upstream session ended; reconnecting on the next call")
}

// start runs a stdio upstream through the process owner (its own process
// group, stopped with toolhost even after SIGKILL) and returns the
// transport over its stdin and stdout. Its stderr goes to the log.
func (c *conn) start() (*procs.Child, mcp.Transport, error) {
	path, err := exec.LookPath(c.cfg.Command)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream %s: command %q: %w", c.cfg.Name, c.cfg.Command, err)
	}
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(c.cfg.Env)) {
		env = append(env, k+"="+c.cfg.Env[k])
	}
	child, p, err := procs.SpawnPiped(c.procs.Spawn, procs.Spec{
		Name: "upstream " + c.cfg.Name, Argv: append([]string{path}, c.cfg.Args...), Env: env, Grace: stopGrace,
	})
	if err != nil {
		return nil, nil, err
	}
	go func() {
		_, _ = io.Copy(&lineLog{log: c.log}, p.Stderr)
		p.Stderr.Close()
	}()
	return child, &mcp.IOTransport{Reader: p.Stdout, Writer: p.Stdin}, nil
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
			c.drop(sess)
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// call runs one tools/call. A failure to reach the upstream or a connection
// lost during the call is a tool.TransientError (the engine retries it for
// read tools only); an error the upstream answered with is not.
func (c *conn) call(ctx context.Context, remote string, args json.RawMessage) (*mcp.CallToolResult, error) {
	sess, err := c.session(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
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
		return res, nil
	}
	var wire *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return nil, err
	case errors.As(err, &wire) && wire.Code == codeRejected:
		// An HTTP 5xx/429 or a refused request: the session itself is fine.
		return nil, tool.Transient(fault.Wrap(err, "upstream %s could not serve tools/call %s: it rejected the request (an HTTP error status such as 503 or 429) or it could not be delivered; call again later", c.cfg.Name, remote))
	case errors.As(err, &wire):
		// The upstream wrote its error message for its client, the model.
		return nil, fault.Safef("upstream %s refused tools/call %s: %s (code %d)", c.cfg.Name, remote, wire.Message, wire.Code)
	}
	c.drop(sess)
	next := "toolhost reconnects on the next call"
	if c.cfg.Transport == "stdio" {
		next = "its process is started again on the next call"
	}
	return nil, tool.Transient(fault.Wrap(err, "upstream %s failed during tools/call %s: the connection was lost; %s", c.cfg.Name, remote, next))
}

// codeRejected is the go-sdk's "rejected by transport" (an HTTP error
// status such as 503, or a request the transport could not deliver), as
// opposed to an error the upstream server answered with.
const codeRejected = -32005

// drop forgets a broken session and closes it; the next call makes a new one.
func (c *conn) drop(sess *mcp.ClientSession) {
	c.mu.Lock()
	if c.sess != sess {
		c.mu.Unlock()
		return
	}
	child := c.child
	c.sess, c.child = nil, nil
	c.mu.Unlock()
	closeSession(sess, child)
}

// close ends the session and, for stdio, stops the whole process group;
// final ends the conn for good (no new session after it). Safe to call twice.
func (c *conn) close(final bool) {
	c.mu.Lock()
	c.closed = c.closed || final
	sess, child := c.sess, c.child
	c.sess, c.child = nil, nil
	c.mu.Unlock()
	if sess != nil {
		closeSession(sess, child)
		if child != nil {
			c.log.Info().Str("event", "upstream_stopped").Int("pid", child.PID).Msg("upstream process group stopped")
		}
	}
}

// pid is the running stdio upstream's pid (0 when none runs).
func (c *conn) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.child == nil {
		return 0
	}
	return c.child.PID
}

// closeSession ends a session; for a stdio upstream, closing the session
// closes its stdin (MCP's shutdown), and a process that has not exited
// within stopGrace is stopped with its whole group.
func closeSession(sess *mcp.ClientSession, child *procs.Child) {
	done := make(chan struct{})
	go func() { _ = sess.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
	}
	if child == nil {
		return
	}
	select {
	case <-child.Done():
	case <-time.After(stopGrace):
		_, _ = child.Stop(context.Background())
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
	if IsLoopbackHost(u.Hostname()) {
		tr.Proxy = nil
	}
	return &http.Client{Transport: &headerTransport{base: tr, headers: cfg.Headers}}, nil
}

// IsLoopbackHost reports whether host names this machine's loopback.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
