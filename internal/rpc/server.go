package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/toolhost/toolhost/internal/gopool"
)

// Error is a protocol error with a JSON-RPC code.
type Error = jsonrpc2.Error

// NewError returns a protocol error.
func NewError(code int64, msg string) *Error { return &jsonrpc2.Error{Code: code, Message: msg} }

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

type server struct {
	h    Handler
	opts Options
	log  zerolog.Logger
	// workers runs requests on goroutines whose stacks are already grown.
	workers *gopool.Pool

	base   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	// cancels holds the calls in flight by id; a cancelled call leaves it
	// at once, so its id may be used again.
	cancels  map[jsonrpc2.ID]*context.CancelFunc
	inflight sync.WaitGroup
	running  int
	draining bool
}

type peer struct{ conn *jsonrpc2.Conn }

func (p peer) Notify(ctx context.Context, method string, params any) error {
	return p.conn.Notify(ctx, method, params)
}

func (p peer) Call(ctx context.Context, method string, params, result any) error {
	return p.conn.Call(ctx, method, params, result)
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
	s := &server{h: h, opts: opts, log: opts.Log, base: base, cancel: cancel, cancels: map[jsonrpc2.ID]*context.CancelFunc{}, workers: gopool.New(10 * time.Second)}
	st := newStream(r, w, nil, opts.LSP, opts.MaxMessage, s.drain)
	// The connection outlives base: cancelling the calls still running
	// after the grace period must not close it before they are answered.
	connCtx, connCancel := context.WithCancel(context.Background())
	defer connCancel()
	conn := jsonrpc2.NewConn(connCtx, st, s, jsonrpc2.SetLogger(logAdapter{opts.Log}))
	select {
	case <-conn.DisconnectNotify():
	case <-st.failed:
		// Nobody can receive an answer any more: cancel what runs, let it
		// end (its audit rows are written), and stop reading.
		s.log.Warn().Str("event", "output_closed").Msg("cannot write to the client; ending the session")
		s.mu.Lock()
		s.draining = true
		s.mu.Unlock()
		s.cancel()
		s.drain()
		_ = conn.Close()
	case <-ctx.Done():
		s.log.Info().Str("event", "shutdown").Msg("shutting down: draining in-flight calls")
		s.drain()
		_ = conn.Close()
	}
	return nil
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

// Handle implements jsonrpc2.Handler: notifications inline, requests each in
// their own goroutine so a slow call never blocks ping or another call.
func (s *server) Handle(_ context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	p := peer{conn}
	if req.Notif {
		if req.Method == "notifications/cancelled" {
			s.cancelRequest(params)
			return
		}
		s.h.Notification(s.base, p, req.Method, params)
		return
	}
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		_ = conn.ReplyWithError(s.base, req.ID, NewError(CodeShuttingDown, "server is shutting down"))
		return
	}
	if _, dup := s.cancels[req.ID]; dup {
		s.mu.Unlock()
		_ = conn.ReplyWithError(s.base, req.ID, NewError(CodeInvalidRequest, "invalid request: a call with this id is still in flight; use a new id for each request"))
		return
	}
	if s.running >= s.opts.MaxInFlight {
		s.mu.Unlock()
		_ = conn.ReplyWithError(s.base, req.ID, NewError(CodeOverloaded, fmt.Sprintf("server overloaded: %d requests already in flight; retry when some have been answered", s.opts.MaxInFlight)))
		return
	}
	s.running++
	ctx, cancel := context.WithCancel(s.base)
	entry := &cancel
	s.cancels[req.ID] = entry
	s.inflight.Add(1)
	s.mu.Unlock()

	s.workers.Go(func() {
		defer s.inflight.Done()
		defer func() {
			s.mu.Lock()
			s.running--
			s.mu.Unlock()
		}()
		defer cancel()
		result, err := s.h.Handle(ctx, p, req.Method, params)
		s.mu.Lock()
		if s.cancels[req.ID] == entry {
			delete(s.cancels, req.ID)
		}
		s.mu.Unlock()
		if ctx.Err() != nil && s.base.Err() == nil {
			// Cancelled by the client: MCP says no response is sent.
			return
		}
		if err != nil {
			_ = conn.ReplyWithError(context.Background(), req.ID, toWire(err))
			return
		}
		if err := conn.Reply(context.Background(), req.ID, result); err != nil && !errors.Is(err, jsonrpc2.ErrClosed) {
			s.log.Error().Err(err).Str("method", req.Method).Msg("write response")
		}
	})
}

func (s *server) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || len(p.RequestID) == 0 {
		return
	}
	var id jsonrpc2.ID
	if err := id.UnmarshalJSON(p.RequestID); err != nil {
		return
	}
	s.mu.Lock()
	cancel := s.cancels[id]
	delete(s.cancels, id)
	s.mu.Unlock()
	if cancel != nil {
		(*cancel)()
	}
}

// toWire maps an error to a JSON-RPC error: the one place codes are decided.
func toWire(err error) *jsonrpc2.Error {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return je
	}
	return &jsonrpc2.Error{Code: CodeInternalError, Message: err.Error()}
}

type logAdapter struct{ l zerolog.Logger }

func (a logAdapter) Printf(format string, v ...any) { a.l.Debug().Msgf(format, v...) }
