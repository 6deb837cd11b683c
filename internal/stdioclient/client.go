package stdioclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/procs"
)

// RPCError is a JSON-RPC error response.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// Message is any incoming JSON-RPC message.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RequestHandler answers a server→client request (e.g. elicitation/create).
type RequestHandler func(method string, params json.RawMessage) (any, *RPCError)

// Client talks to one server process.
type Client struct {
	child  *procs.Child
	stdin  io.WriteCloser
	stderr bytes.Buffer
	// stderrDone is closed when the server's stderr has been read to EOF.
	stderrDone chan struct{}

	wmu     sync.Mutex
	mu      sync.Mutex
	nextID  int64
	pending map[string]chan Message
	noteCh  chan Message
	onReq   RequestHandler
	done    chan struct{}
	// readDone is set, under mu, when the server's stdout has ended.
	readDone bool
}

// Start launches bin with args (in its own process group, through procs,
// so it dies with this process) and speaks MCP to it over its stdio.
func Start(bin string, args []string, env []string) (*Client, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, err
	}
	child, p, err := procs.SpawnPiped(procs.Spawn, procs.Spec{
		Name: filepath.Base(path) + " " + strings.Join(args, " "), Argv: append([]string{path}, args...), Env: env,
	})
	if err != nil {
		return nil, err
	}
	c := &Client{child: child, stdin: p.Stdin, stderrDone: make(chan struct{}),
		pending: map[string]chan Message{}, noteCh: make(chan Message, 1024), done: make(chan struct{})}
	go func() {
		_, _ = io.Copy(&lockedWriter{w: &c.stderr, mu: &c.mu}, p.Stderr)
		p.Stderr.Close()
		close(c.stderrDone)
	}()
	go func() {
		c.read(p.Stdout)
		p.Stdout.Close()
	}()
	return c, nil
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Process returns the server process.
func (c *Client) Process() *procs.Child { return c.child }

// Stderr returns what the server logged so far.
func (c *Client) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// OnRequest sets the handler for server→client requests.
func (c *Client) OnRequest(h RequestHandler) {
	c.mu.Lock()
	c.onReq = h
	c.mu.Unlock()
}

// Notifications returns the channel of server notifications.
func (c *Client) Notifications() <-chan Message { return c.noteCh }

func (c *Client) read(r io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			c.mu.Lock()
			h := c.onReq
			c.mu.Unlock()
			go c.answer(m, h)
		case m.Method != "":
			select {
			case c.noteCh <- m:
			default:
			}
		default:
			c.mu.Lock()
			ch := c.pending[string(m.ID)]
			delete(c.pending, string(m.ID))
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	c.mu.Lock()
	c.readDone = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

func (c *Client) answer(m Message, h RequestHandler) {
	resp := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if h == nil {
		resp["error"] = RPCError{Code: -32601, Message: "client does not handle " + m.Method}
	} else if res, err := h(m.Method, m.Params); err != nil {
		resp["error"] = err
	} else {
		resp["result"] = res
	}
	_ = c.send(resp)
}

// SendRaw writes one raw line.
func (c *Client) SendRaw(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.stdin.Write(append(append([]byte(nil), line...), '\n'))
	return err
}

func (c *Client) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.SendRaw(b)
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	return c.send(m)
}

// Dispatch sends a request and returns its id and the channel its response
// arrives on.
func (c *Client) Dispatch(method string, params any) (int64, <-chan Message, error) {
	c.mu.Lock()
	if c.readDone {
		// The server's stdout has ended: nothing would ever answer (a write
		// may still succeed while a dying server's stdin is not yet closed).
		stderr := c.stderr.String() // under mu: the stderr copier writes it
		c.mu.Unlock()
		return 0, nil, fmt.Errorf("server closed the connection; %s not sent; stderr:\n%s", method, stderr)
	}
	c.nextID++
	id := c.nextID
	ch := make(chan Message, 1)
	c.pending[strconv.FormatInt(id, 10)] = ch
	c.mu.Unlock()
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	if err := c.send(m); err != nil {
		c.forget(id)
		return 0, nil, err
	}
	return id, ch, nil
}

// forget drops a pending request whose answer is no longer awaited.
func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, strconv.FormatInt(id, 10))
	c.mu.Unlock()
}

// Call sends a request and waits for its result.
func (c *Client) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id, ch, err := c.Dispatch(method, params)
	if err != nil {
		return nil, err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("server closed the connection before answering %s; stderr:\n%s", method, c.Stderr())
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		// Tell the server, as MCP asks, and stop waiting for the answer.
		c.forget(id)
		_ = c.Notify("notifications/cancelled", map[string]any{"requestId": id, "reason": ctx.Err().Error()})
		return nil, ctx.Err()
	}
}

// Initialize performs the MCP handshake.
func (c *Client) Initialize(ctx context.Context, version string, caps map[string]any) (json.RawMessage, error) {
	if caps == nil {
		caps = map[string]any{}
	}
	res, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": version, "capabilities": caps,
		"clientInfo": map[string]any{"name": "toolhost-stdioclient", "version": "1"},
	})
	if err != nil {
		return nil, err
	}
	return res, c.Notify("notifications/initialized", nil)
}

// ToolResult is a tools/call result.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// Text returns the first text block.
func (r *ToolResult) Text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// CallTool calls a tool; meta may be nil.
func (c *Client) CallTool(ctx context.Context, name string, args any, meta map[string]any) (*ToolResult, error) {
	p := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		p["_meta"] = meta
	}
	raw, err := c.Call(ctx, "tools/call", p)
	if err != nil {
		return nil, err
	}
	var r ToolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decode tools/call result: %w", err)
	}
	return &r, nil
}

// Close closes stdin and waits for the server to exit (stopping its process
// group after timeout). A server that exits with a non-zero status or by a
// signal is an error.
func (c *Client) Close(timeout time.Duration) error {
	_ = c.stdin.Close()
	select {
	case <-c.child.Done():
	case <-time.After(timeout):
		_, _ = c.child.Stop(context.Background())
		<-c.done
		<-c.stderrDone
		return errors.New("server did not exit in time; stopped")
	}
	<-c.done
	<-c.stderrDone
	switch code, sig, err := c.child.Exit(); {
	case err != nil:
		return err
	case sig != "":
		return fmt.Errorf("server ended by %s", sig)
	case code != 0:
		return fmt.Errorf("server exit status %d", code)
	}
	return nil
}
