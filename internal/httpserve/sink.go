package httpserve

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/rpc"
)

// keepAlive is how often an open SSE stream that carries nothing gets a
// comment line, so idle-timing intermediaries and clients keep it.
const keepAlive = 15 * time.Second

var (
	errFinished = errors.New("the HTTP response to this request is already complete")
	errNoSSE    = errors.New("the client does not accept text/event-stream, so nothing but the final response can reach it")
)

// postSink is the rpc.Sink of one POSTed request: its answer is one JSON
// body, or — once something must reach the client before the answer (a
// progress notification, a log message, an elicitation/create of a 2025
// session) — an SSE stream that the answer ends.
type postSink struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	canSSE bool

	mu       sync.Mutex
	sse      bool
	finished bool
	replied  *rpc.Error // the error the answer carried, if any
	answered bool
	done     chan struct{}
	stopKA   chan struct{}
}

func newPostSink(w http.ResponseWriter, r *http.Request) *postSink {
	return &postSink{w: w, rc: http.NewResponseController(w), canSSE: acceptsSSE(r),
		done: make(chan struct{}), stopKA: make(chan struct{})}
}

// startSSE turns the response into an event stream; the caller holds mu.
func (s *postSink) startSSE() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.sse = true
	go s.keepAlive()
}

func (s *postSink) keepAlive() {
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-s.stopKA:
			return
		case <-t.C:
			s.mu.Lock()
			if !s.finished {
				_, _ = s.w.Write([]byte(":\n\n"))
				_ = s.rc.Flush()
			}
			s.mu.Unlock()
		}
	}
}

func (s *postSink) event(msg []byte) error {
	buf := make([]byte, 0, len(msg)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, msg...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Send implements rpc.Sink.
func (s *postSink) Send(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return errFinished
	}
	if !s.canSSE {
		return errNoSSE
	}
	if !s.sse {
		s.startSSE()
	}
	return s.event(msg)
}

// Reply implements rpc.Sink.
func (s *postSink) Reply(msg []byte, e *rpc.Error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return errFinished
	}
	s.finished, s.answered, s.replied = true, msg != nil, e
	defer close(s.done)
	if s.sse {
		close(s.stopKA)
	}
	switch {
	case msg == nil:
		if !s.sse {
			s.w.WriteHeader(http.StatusAccepted)
		}
		return nil
	case s.sse:
		return s.event(msg)
	}
	if e != nil && e.Kind == rpc.KindOverloaded {
		// The server's bound on requests in flight: a slot frees as
		// soon as one is answered.
		s.w.Header().Set("Retry-After", "1")
	}
	writeJSON(s.w, statusOf(e), msg)
	return nil
}

// abandon ends the sink when the client went away before the answer: what
// the call still sends is dropped (the ResponseWriter is gone).
func (s *postSink) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.finished {
		s.finished = true
		if s.sse {
			close(s.stopKA)
		}
	}
}

// statusOf is the HTTP status of an answer, chosen by the kind of its
// error as the Streamable HTTP binding says: 404 for a method the request's
// revision does not define, 400 for a request that cannot be served as
// sent, 503 past the server's bound on requests in flight (with
// Retry-After), 200 for everything else (the error is in the body).
func statusOf(e *rpc.Error) int {
	switch {
	case e == nil:
		return http.StatusOK
	case e.Kind == rpc.KindOverloaded:
		return http.StatusServiceUnavailable
	case e.Kind == rpc.KindUnknownMethod:
		return http.StatusNotFound
	case e.Kind == rpc.KindBadRequest:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// streamSink is a 2025 session's GET stream: the messages that relate to
// no request (notifications/tools/list_changed). They are dropped while no
// stream is open, as nothing could deliver them.
type streamSink struct {
	mu     sync.Mutex
	cur    *getStream
	closed bool
}

type getStream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	done chan struct{}
}

// attach makes g the session's stream, ending the one it replaces; on a
// session that ended it ends g at once.
func (s *streamSink) attach(g *getStream) {
	s.mu.Lock()
	old := s.cur
	s.cur = g
	if s.closed {
		old, s.cur = g, nil
	}
	s.mu.Unlock()
	if old != nil {
		close(old.done)
	}
}

// close ends the stream for good: the session ended.
func (s *streamSink) close() {
	s.mu.Lock()
	old := s.cur
	s.cur, s.closed = nil, true
	s.mu.Unlock()
	if old != nil {
		close(old.done)
	}
}

func (s *streamSink) detach(g *getStream) {
	s.mu.Lock()
	if s.cur == g {
		s.cur = nil
	}
	s.mu.Unlock()
}

// Send implements rpc.Sink.
func (s *streamSink) Send(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	buf := append(append([]byte("event: message\ndata: "), msg...), "\n\n"...)
	if _, err := s.cur.w.Write(buf); err != nil {
		return err
	}
	return s.cur.rc.Flush()
}

// Reply implements rpc.Sink: no request arrives on a GET stream.
func (s *streamSink) Reply([]byte, *rpc.Error) error { return nil }

// comment writes an SSE comment (keep-alive) on the stream if it is g.
func (s *streamSink) comment(g *getStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == g {
		_, _ = g.w.Write([]byte(":\n\n"))
		_ = g.rc.Flush()
	}
}
