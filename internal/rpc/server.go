package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/gopool"
)

// Error is a protocol error with a JSON-RPC code.
type Error struct {
	Code    int64            `json:"code"`
	Message string           `json:"message"`
	Data    *json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// NewError returns a protocol error.
func NewError(code int64, msg string) *Error { return &Error{Code: code, Message: msg} }

// Peer lets a method handler talk back to the client during a call.
type Peer interface {
	// Notify sends a notification to the client.
	Notify(ctx context.Context, method string, params any) error
	// Call sends a request to the client and waits for its result.
	Call(ctx context.Context, method string, params, result any) error
}

// Handler serves the methods of one session.
type Handler interface {
	// Handle answers a request; a returned *Error (possibly wrapped) keeps
	// its code, any other error becomes -32603.
	Handle(ctx context.Context, peer Peer, method string, params json.RawMessage) (any, error)
	// Notification receives a client notification (other than
	// notifications/cancelled, which the server handles itself).
	Notification(ctx context.Context, peer Peer, method string, params json.RawMessage)
}

// Options configure Serve.
type Options struct {
	// LSP selects Content-Length framing instead of newline-delimited JSON.
	LSP bool
	// MaxMessage caps one incoming message (DefaultMaxMessage if zero).
	MaxMessage int
	// MaxInFlight caps the requests running or waiting to write their
	// response (DefaultMaxInFlight if zero); one more is refused with
	// CodeOverloaded, written from the reading goroutine, so a client that
	// sends without reading stalls the reader instead of growing one
	// blocked goroutine per request without bound.
	MaxInFlight int
	// Grace bounds how long in-flight calls may run after input ends or
	// shutdown starts (default 10 s).
	Grace time.Duration
	Log   zerolog.Logger
}

// message is any JSON-RPC 2.0 message, decoded once. The id stays raw so it
// is echoed byte for byte.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

// response is what the client sent back for one of our requests.
type response struct {
	result json.RawMessage
	err    *Error
}

type server struct {
	h      Handler
	opts   Options
	log    zerolog.Logger
	stream *stream
	// workers runs requests on goroutines whose stacks are already grown.
	workers *gopool.Pool

	base   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	// cancels holds the calls in flight by raw id; a cancelled call leaves
	// it at once, so its id may be used again.
	cancels  map[string]*context.CancelFunc
	inflight sync.WaitGroup
	running  int
	draining bool

	// pending are our requests to the client (elicitation) by id.
	nextID  atomic.Int64
	pmu     sync.Mutex
	pending map[string]chan response
	closed  bool
}

// Serve runs one session over r/w until input ends or ctx is cancelled
// (shutdown). Either way it stops taking new requests, lets in-flight ones
// finish within the grace period, writes their responses and returns nil.
func Serve(ctx context.Context, r io.Reader, w io.Writer, h Handler, opts Options) error {
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &server{h: h, opts: opts, log: opts.Log, base: base, cancel: cancel,
		cancels: map[string]*context.CancelFunc{}, pending: map[string]chan response{},
		workers: gopool.New(10 * time.Second)}
	s.stream = newStream(r, w, opts.LSP, opts.MaxMessage, s.drain)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		s.readLoop()
	}()
	select {
	case <-readDone:
	case <-s.stream.failed:
		// Nobody can receive an answer any more: cancel what runs, let it
		// end (its audit rows are written), and stop reading.
		s.log.Warn().Str("event", "output_closed").Msg("cannot write to the client; ending the session")
		s.mu.Lock()
		s.draining = true
		s.mu.Unlock()
		s.cancel()
		s.drain()
	case <-ctx.Done():
		s.log.Info().Str("event", "shutdown").Msg("shutting down: draining in-flight calls")
		s.drain()
	}
	s.closePending()
	return nil
}

// readLoop reads and dispatches messages until input ends (after the drain
// the stream runs at EOF).
func (s *server) readLoop() {
	for {
		var m message
		if err := s.stream.ReadObject(&m); err != nil {
			return
		}
		s.dispatch(&m)
	}
}

func (s *server) dispatch(m *message) {
	switch {
	case m.Method != nil && (len(m.Result) > 0 || m.Error != nil):
		_ = s.stream.writeError(m.ID, NewError(CodeInvalidRequest, "invalid request: a message is either a request (method) or a response (result or error), not both"))
	case m.Method != nil && len(m.ID) == 0:
		s.notification(*m.Method, m.Params)
	case m.Method != nil:
		s.request(m)
	case len(m.ID) > 0 && (len(m.Result) > 0 || m.Error != nil):
		s.clientResponse(m)
	default:
		_ = s.stream.writeError(m.ID, NewError(CodeInvalidRequest, "invalid request: a message needs a method (request, notification) or a result or error (response)"))
	}
}

func (s *server) notification(method string, params json.RawMessage) {
	if method == "notifications/cancelled" {
		s.cancelRequest(params)
		return
	}
	s.h.Notification(s.base, s, method, params)
}

// request runs one client request on a worker: a slow call never blocks
// ping or another call.
func (s *server) request(m *message) {
	id := m.ID
	key := string(id)
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		s.replyError(id, NewError(CodeShuttingDown, "server is shutting down"))
		return
	}
	if _, dup := s.cancels[key]; dup {
		s.mu.Unlock()
		s.replyError(id, NewError(CodeInvalidRequest, "invalid request: a call with this id is still in flight; use a new id for each request"))
		return
	}
	if s.running >= s.opts.MaxInFlight {
		s.mu.Unlock()
		s.replyError(id, NewError(CodeOverloaded, fmt.Sprintf("server overloaded: %d requests already in flight; retry when some have been answered", s.opts.MaxInFlight)))
		return
	}
	s.running++
	ctx, cancel := context.WithCancel(s.base)
	entry := &cancel
	s.cancels[key] = entry
	s.inflight.Add(1)
	s.mu.Unlock()

	method, params := *m.Method, m.Params
	s.workers.Go(func() {
		defer s.inflight.Done()
		defer func() {
			s.mu.Lock()
			s.running--
			s.mu.Unlock()
		}()
		defer cancel()
		result, err := s.h.Handle(ctx, s, method, params)
		s.mu.Lock()
		if s.cancels[key] == entry {
			delete(s.cancels, key)
		}
		s.mu.Unlock()
		if ctx.Err() != nil && s.base.Err() == nil {
			// Cancelled by the client: MCP says no response is sent.
			return
		}
		if err != nil {
			s.replyError(id, toWire(err))
			return
		}
		if err := s.reply(id, result); err != nil {
			s.log.Error().Err(err).Str("method", method).Msg("write response")
		}
	})
}

// reply writes {"jsonrpc":"2.0","id":ID,"result":R}; a json.RawMessage
// result (the tools/call hot path) is written as is.
func (s *server) reply(id json.RawMessage, result any) error {
	var body []byte
	switch r := result.(type) {
	case json.RawMessage:
		body = r
	default:
		b, err := json.Marshal(result)
		if err != nil {
			return s.replyError(id, NewError(CodeInternalError, "encode result: "+err.Error()))
		}
		body = b
	}
	if len(body) == 0 {
		body = []byte("null")
	}
	return s.stream.writeResponse(id, `,"result":`, body)
}

func (s *server) replyError(id json.RawMessage, e *Error) error {
	return s.stream.writeError(id, e)
}

func (s *server) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || len(p.RequestID) == 0 {
		return
	}
	s.mu.Lock()
	cancel := s.cancels[string(p.RequestID)]
	delete(s.cancels, string(p.RequestID))
	s.mu.Unlock()
	if cancel != nil {
		(*cancel)()
	}
}

// Notify implements Peer.
func (s *server) Notify(_ context.Context, method string, params any) error {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", method, params})
	if err != nil {
		return err
	}
	return s.stream.writeRaw(b)
}

// errClosed is returned to a Call still waiting when the session ends.
var errClosed = errors.New("the session ended before the client answered")

// Call implements Peer: a request to the client, answered on the read loop.
func (s *server) Call(ctx context.Context, method string, params, result any) error {
	id := strconv.FormatInt(s.nextID.Add(1), 10)
	ch := make(chan response, 1)
	s.pmu.Lock()
	if s.closed {
		s.pmu.Unlock()
		return errClosed
	}
	s.pending[id] = ch
	s.pmu.Unlock()
	defer func() {
		s.pmu.Lock()
		delete(s.pending, id)
		s.pmu.Unlock()
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
	if err := s.stream.writeRaw(b); err != nil {
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
func (s *server) clientResponse(m *message) {
	s.pmu.Lock()
	ch := s.pending[string(m.ID)]
	delete(s.pending, string(m.ID))
	s.pmu.Unlock()
	if ch == nil {
		s.log.Debug().RawJSON("id", m.ID).Msg("ignoring a response with no corresponding request")
		return
	}
	ch <- response{result: m.Result, err: m.Error}
}

// closePending fails the Calls still waiting: nobody will answer them.
func (s *server) closePending() {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.closed = true
	for id, ch := range s.pending {
		close(ch)
		delete(s.pending, id)
	}
}

// drain stops new requests and waits (bounded) for in-flight ones.
func (s *server) drain() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.opts.Grace):
		s.log.Warn().Str("event", "drain_timeout").Msg("in-flight calls still running after the grace period; cancelling them")
		s.cancel()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	}
}

// toWire maps an error to a JSON-RPC error: the one place codes are decided.
func toWire(err error) *Error {
	var je *Error
	if errors.As(err, &je) {
		return je
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}
