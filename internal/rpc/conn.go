package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/util/gopool"
)

// Peer lets a method handler talk back to the client during a call.
type Peer interface {
	// Notify sends a notification that relates to the request.
	Notify(ctx context.Context, method string, params any) error
	// Call sends a request to the client and waits for its result.
	Call(ctx context.Context, method string, params, result any) error
	// Session is the peer for messages that relate to no request (a
	// 2025 session's notifications/tools/list_changed): the stdio
	// stream, or an HTTP session's GET stream.
	Session() Peer
}

// Handler serves the methods of one connection.
type Handler interface {
	// Handle answers a request; a returned *Error (possibly wrapped) keeps
	// its code, any other error becomes -32603.
	Handle(ctx context.Context, peer Peer, req Request) (any, error)
	// Notification receives a client notification (other than
	// notifications/cancelled, which the connection handles itself).
	Notification(ctx context.Context, peer Peer, method string, params json.RawMessage)
}

// Drainer is implemented by a Handler that holds requests open until it is
// told to stop (subscriptions/listen): Draining runs when shutdown starts,
// before in-flight requests are waited for.
type Drainer interface {
	Draining()
}

// Sink carries the messages of a request to the client: on stdio the one
// stream of the session, on HTTP the response of the POST that carried the
// request.
type Sink interface {
	// Send writes a notification or a request of ours that relates to the
	// request.
	Send(msg []byte) error
	// Reply writes the final response (e set when it is an error); nil
	// msg means the request ends without one (cancelled by the client).
	Reply(msg []byte, e *Error) error
}

// ErrShutdown is the cause given to calls still running when a shutdown's
// grace period ends.
var ErrShutdown = errors.New("toolhost was shutting down and the call did not finish within the grace period (--grace)")

// Limit bounds the requests in flight (running or writing their answer)
// of the connections that share it: one stdio session's, or every
// connection of one HTTP server. Each request in flight may hold an OS
// thread in a blocking file or lock call, so the bound is also the bound
// on such threads.
type Limit struct{ slots chan struct{} }

// NewLimit returns a bound of n requests in flight (DefaultMaxInFlight if
// n <= 0).
func NewLimit(n int) *Limit {
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	return &Limit{slots: make(chan struct{}, n)}
}

// Max is the bound.
func (l *Limit) Max() int { return cap(l.slots) }

func (l *Limit) release() { <-l.slots }

// ConnOptions configure a Conn.
type ConnOptions struct {
	// Limit bounds the requests in flight (NewLimit(0) if nil); several
	// connections may share one.
	Limit *Limit
	// Wait makes a request past the bound wait for a slot, holding up the
	// caller of Dispatch — the stdio reader, which then stops reading, so
	// the client's writes block (backpressure). Without it the request is
	// refused at once with CodeOverloaded (HTTP answers 503 with
	// Retry-After).
	Wait bool
	// Grace bounds how long in-flight calls may run after shutdown starts
	// (default 10 s).
	Grace time.Duration
	Log   zerolog.Logger
	// Session carries the messages that relate to no request; nil drops
	// them.
	Session Sink
	// Values is a context whose values (not its deadline or cancellation)
	// every request's context carries: what the transport says about the
	// connection (trace.WithTransport).
	Values context.Context
}

// Conn is the JSON-RPC state of one connection, whatever carries it: the
// requests in flight by id (to refuse a duplicate and to cancel one),
// our requests to the client waiting for their answers, and the drain at
// shutdown. Both transports frame messages into a Conn.
type Conn struct {
	h    Handler
	opts ConnOptions
	log  zerolog.Logger
	// workers runs requests on goroutines whose stacks are already grown.
	workers *gopool.Pool

	base   context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	// cancels holds the calls in flight by raw id; a cancelled call leaves
	// it at once, so its id may be used again.
	cancels  map[string]*served
	inflight sync.WaitGroup
	draining bool
	// drained is closed when draining starts: a request waiting for a
	// slot is refused then.
	drained chan struct{}

	// session is the peer of Conn-wide messages; a request whose sink is
	// the session sink uses it as its own peer (no allocation per call).
	session *peer

	// pending are our requests to the client (elicitation) by id.
	nextID  atomic.Int64
	pmu     sync.Mutex
	pending map[string]chan response
	closed  bool
}

// response is what the client sent back for one of our requests.
type response struct {
	result json.RawMessage
	err    *Error
}

// NewConn returns a connection serving h.
func NewConn(h Handler, opts ConnOptions) *Conn {
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	if opts.Limit == nil {
		opts.Limit = NewLimit(0)
	}
	parent := context.Background()
	if opts.Values != nil {
		parent = context.WithoutCancel(opts.Values)
	}
	base, cancel := context.WithCancelCause(parent)
	c := &Conn{h: h, opts: opts, log: opts.Log, base: base, cancel: cancel,
		cancels: map[string]*served{}, pending: map[string]chan response{}, drained: make(chan struct{}),
		workers: gopool.New(10 * time.Second)}
	c.session = &peer{c: c, sink: opts.Session}
	return c
}

// SessionPeer is the peer of the messages that relate to no request.
func (c *Conn) SessionPeer() Peer { return c.session }

// Dispatch serves one decoded message that arrived on sink: a request runs
// on a worker (a slow call never blocks ping or another call) and answers
// through sink; a notification or a response to one of our requests is
// handled at once.
func (c *Conn) Dispatch(m *Message, sink Sink) {
	switch {
	case m.Method != nil && (len(m.Result) > 0 || m.Error != nil):
		c.refuse(sink, m.ID, NewError(CodeInvalidRequest, "invalid request: a message is either a request (method) or a response (result or error), not both"))
	case m.Method != nil && len(m.ID) == 0:
		c.notification(*m.Method, m.Params, sink)
	case m.Method != nil:
		c.request(m, sink)
	case len(m.ID) > 0 && (len(m.Result) > 0 || m.Error != nil):
		c.clientResponse(m)
	default:
		c.refuse(sink, m.ID, NewError(CodeInvalidRequest, "invalid request: a message needs a method (request, notification) or a result or error (response)"))
	}
}

func (c *Conn) refuse(sink Sink, id json.RawMessage, e *Error) {
	_ = sink.Reply(EncodeError(id, e), e)
}

func (c *Conn) peerFor(sink Sink) *peer {
	if sink == c.opts.Session {
		return c.session
	}
	return &peer{c: c, sink: sink}
}

func (c *Conn) notification(method string, params json.RawMessage, sink Sink) {
	if method == "notifications/cancelled" {
		c.cancelRequest(params)
		return
	}
	c.h.Notification(c.base, c.peerFor(sink), method, params)
}

// admit takes a slot of the limit (waiting for one with Wait) and
// registers the request (under key in the cancel map when key is set), or
// returns the error to refuse it with.
func (c *Conn) admit(key string, entry *served) *Error {
	l := c.opts.Limit
	select {
	case l.slots <- struct{}{}:
	default:
		if !c.opts.Wait {
			return &Error{Code: CodeOverloaded, Kind: KindOverloaded,
				Message: fmt.Sprintf("server overloaded: %d requests already in flight; retry when some have been answered", l.Max())}
		}
		select {
		case l.slots <- struct{}{}:
		case <-c.drained:
			return NewError(CodeShuttingDown, "server is shutting down")
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		l.release()
		return NewError(CodeShuttingDown, "server is shutting down")
	}
	if _, dup := c.cancels[key]; entry != nil && dup {
		l.release()
		return NewError(CodeInvalidRequest, "invalid request: a call with this id is still in flight; use a new id for each request")
	}
	c.inflight.Add(1)
	if entry != nil {
		c.cancels[key] = entry
	}
	return nil
}

func (c *Conn) request(m *Message, sink Sink) {
	key := string(m.ID)
	ctx, cancel := context.WithCancel(c.base)
	r := &served{c: c, sink: sink, id: m.ID, method: *m.Method, key: key, cancel: cancel, early: true}
	if e := c.admit(key, r); e != nil {
		cancel()
		c.refuse(sink, m.ID, e)
		return
	}
	req := Request{ID: m.ID, Method: *m.Method, Params: m.Params, served: r}
	p := c.peerFor(sink)
	c.workers.Go(func() {
		result, err := c.h.Handle(ctx, p, req)
		r.answer(ctx, result, err)
	})
}

// Serve runs one request on the caller's goroutine, in ctx (cancelled
// when the client goes away) and the connection's lifetime. It is for
// transports where each request has a context of its own and nothing
// refers to it by id (a stateless HTTP POST): no duplicate check, no
// cancellation by notifications/cancelled, and no early answer (the
// response ends when the handler returns).
func (c *Conn) Serve(ctx context.Context, m *Message, sink Sink) {
	if e := c.admit("", nil); e != nil {
		c.refuse(sink, m.ID, e)
		return
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(c.base, func() { cancel(context.Cause(c.base)) })
	defer stop()
	r := &served{c: c, sink: sink, id: m.ID, method: *m.Method, cancel: func() {}}
	result, err := c.h.Handle(ctx, c.peerFor(sink), Request{ID: m.ID, Method: *m.Method, Params: m.Params, served: r})
	r.answer(ctx, result, err)
}

// served is one request in flight: what answering it needs, and whether
// it was answered.
type served struct {
	c      *Conn
	sink   Sink
	id     json.RawMessage
	method string
	// key is its entry in the cancel map ("" when it has none).
	key    string
	cancel context.CancelFunc
	// early is set when the request may be answered before its handler
	// returns (AnswerEarly): its transport frames answers into a stream
	// that outlives the handler.
	early    bool
	answered atomic.Bool
}

// ErrAnswered is what a handler returns when its request was answered
// early (Request.AnswerEarly); nothing more is written.
var ErrAnswered = errors.New("the request was answered early")

// CanAnswerEarly reports whether AnswerEarly may answer the request: a
// stdio request can; a stateless HTTP POST, whose response ends when the
// handler returns, cannot.
func (r Request) CanAnswerEarly() bool { return r.served != nil && r.served.early }

// AnswerEarly answers the request now, from any goroutine, while its
// handler still runs (a tool that overran its deadline holds the
// handler's goroutine): the answer is written, the request leaves the
// requests in flight and its slot of the limit is free. What the handler
// returns afterwards is dropped. It reports false, and does nothing, when
// the request was answered already or cannot be answered early.
func (r Request) AnswerEarly(ctx context.Context, result any, err error) bool {
	if !r.CanAnswerEarly() {
		return false
	}
	return r.served.answer(ctx, result, err)
}

// answer writes the request's answer, once: the first of the handler's
// return and AnswerEarly wins. It reports whether this call answered.
func (r *served) answer(ctx context.Context, result any, err error) bool {
	if !r.answered.CompareAndSwap(false, true) {
		return false
	}
	c := r.c
	defer r.cancel()
	defer c.inflight.Done()
	// A request holds its slot until its answer is written, so a client
	// that sends without reading stalls at the bound.
	defer c.opts.Limit.release()
	if r.key != "" {
		c.mu.Lock()
		if c.cancels[r.key] == r {
			delete(c.cancels, r.key)
		}
		c.mu.Unlock()
	}
	if ctx.Err() != nil && c.base.Err() == nil {
		// Cancelled by the client: MCP says no response is sent.
		_ = r.sink.Reply(nil, nil)
		return true
	}
	if err != nil {
		e := ToWire(err)
		_ = r.sink.Reply(EncodeError(r.id, e), e)
		return true
	}
	b, e := EncodeResult(r.id, result)
	if e != nil {
		_ = r.sink.Reply(EncodeError(r.id, e), e)
		return true
	}
	if err := r.sink.Reply(b, nil); err != nil {
		c.log.Error().Err(err).Str("method", r.method).Msg("write response")
	}
	return true
}

func (c *Conn) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || len(p.RequestID) == 0 {
		return
	}
	c.mu.Lock()
	r := c.cancels[string(p.RequestID)]
	delete(c.cancels, string(p.RequestID))
	c.mu.Unlock()
	if r != nil {
		r.cancel()
	}
}

// errClosed is returned to a Call still waiting when the connection ends.
var errClosed = errors.New("the session ended before the client answered")

// peer is the Peer of the requests that arrived on one sink.
type peer struct {
	c    *Conn
	sink Sink
}

// Notify implements Peer.
func (p *peer) Notify(_ context.Context, method string, params any) error {
	if p.sink == nil {
		return nil
	}
	b, err := EncodeNotification(method, params)
	if err != nil {
		return err
	}
	return p.sink.Send(b)
}

// Session implements Peer.
func (p *peer) Session() Peer { return p.c.session }

// Call implements Peer: a request to the client, answered through Dispatch.
func (p *peer) Call(ctx context.Context, method string, params, result any) error {
	c := p.c
	if p.sink == nil {
		return errors.New("no stream to the client is open")
	}
	id := strconv.FormatInt(c.nextID.Add(1), 10)
	ch := make(chan response, 1)
	c.pmu.Lock()
	if c.closed {
		c.pmu.Unlock()
		return errClosed
	}
	c.pending[id] = ch
	c.pmu.Unlock()
	defer func() {
		c.pmu.Lock()
		delete(c.pending, id)
		c.pmu.Unlock()
	}()
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params,omitempty"`
	}{"2.0", json.RawMessage(id), method, params})
	if err != nil {
		return err
	}
	if err := p.sink.Send(b); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return errClosed
		}
		if r.err != nil {
			return r.err
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(r.result, result)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clientResponse hands the client's answer to the Call waiting for it.
func (c *Conn) clientResponse(m *Message) {
	c.pmu.Lock()
	ch := c.pending[string(m.ID)]
	delete(c.pending, string(m.ID))
	c.pmu.Unlock()
	if ch == nil {
		c.log.Debug().RawJSON("id", m.ID).Msg("ignoring a response with no corresponding request")
		return
	}
	ch <- response{result: m.Result, err: m.Error}
}

// Close fails the Calls still waiting (nobody will answer them) and
// cancels what still runs.
func (c *Conn) Close() {
	c.pmu.Lock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.pmu.Unlock()
	c.cancel(ErrShutdown)
}

// Abort cancels every call at once (nobody can receive an answer any
// more) and waits, bounded, for them to end.
func (c *Conn) Abort(cause error) {
	c.startDraining()
	c.cancel(cause)
	c.Drain()
}

// startDraining refuses new requests from now on (also those waiting for
// a slot); it reports whether draining started just now.
func (c *Conn) startDraining() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	c.draining = true
	close(c.drained)
	return true
}

// Drain stops new requests and waits (bounded by the grace period) for the
// ones in flight; those still running then are cancelled with ErrShutdown
// as the cause, and answered.
func (c *Conn) Drain() {
	first := c.startDraining()
	if d, ok := c.h.(Drainer); ok && first {
		d.Draining()
	}
	done := make(chan struct{})
	go func() { c.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(c.opts.Grace):
		c.log.Warn().Str("event", "drain_timeout").Msg("in-flight calls still running after the grace period; cancelling them")
		c.cancel(ErrShutdown)
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	}
}
