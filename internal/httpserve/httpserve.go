package httpserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/server"
	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/webguard"
)

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// Defaults of the transport's limits.
const (
	DefaultBodyTimeout = 10 * time.Second
	// maxSessions bounds the 2025 sessions kept at once; the idlest goes
	// when a new one would pass it.
	maxSessions = 256
	// sessionIdle ends a 2025 session nothing used for this long.
	sessionIdle = time.Hour
)

// Options configure the HTTP transport.
type Options struct {
	// AuthToken must come as "Authorization: Bearer <token>" on every
	// request: a client is trusted as far as it holds the token, and no
	// further (an empty token refuses every request).
	AuthToken string
	// AllowedOrigins are browser origins (scheme://host[:port]) served
	// besides the server's own loopback origin.
	AllowedOrigins []string
	// BodyTimeout bounds the time a client may take to send a request body
	// (DefaultBodyTimeout if zero).
	BodyTimeout time.Duration
	// MaxMessage caps one message (rpc.DefaultMaxMessage if zero).
	MaxMessage int
	// MaxInFlight bounds the requests in flight across every connection
	// of the server, stateless and sessions alike (rpc.DefaultMaxInFlight
	// if zero); a request past it is answered 503 with Retry-After.
	MaxInFlight int
	Log         zerolog.Logger
	// Grace bounds how long in-flight requests may finish at shutdown.
	Grace time.Duration
}

// Handler is the MCP method surface the transport frames requests into.
type Handler interface {
	rpc.Handler
	// Forget drops a 2025 session's peer when the session ends.
	Forget(rpc.Peer)
}

// Server is the Streamable HTTP transport of one toolhost session.
type Server struct {
	h    Handler
	opts Options
	log  zerolog.Logger
	// guard checks Host, Origin and the token of every request.
	guard *webguard.Guard

	// stateless serves the 2026-07-28 requests: each POST is its own
	// request, cancelled when its client goes away.
	stateless *rpc.Conn
	// anon serves 2025 requests that arrive without a session.
	anon *rpc.Conn
	// limit bounds the requests in flight of all the connections.
	limit *rpc.Limit

	mu       sync.Mutex
	sessions map[string]*session
	// stopping ends the GET streams, which would never go idle, at
	// shutdown.
	stopping context.Context
	stop     context.CancelFunc
}

// session is a 2025 (2025-03-26 … 2025-11-25) session, begun by
// initialize and named by the Mcp-Session-Id header.
type session struct {
	id     string
	conn   *rpc.Conn
	stream *streamSink
	mu     sync.Mutex
	last   time.Time
}

func (s *session) touch() {
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
}

// New returns the transport serving h.
func New(h Handler, o Options) *Server {
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = rpc.DefaultMaxMessage
	}
	s := &Server{h: h, opts: o, log: o.Log, sessions: map[string]*session{}, guard: webguard.New(o.AllowedOrigins), limit: rpc.NewLimit(o.MaxInFlight)}
	s.stopping, s.stop = context.WithCancel(context.Background())
	s.stateless = rpc.NewConn(h, s.connOptions(nil, ""))
	s.anon = rpc.NewConn(h, s.connOptions(nil, ""))
	return s
}

// connOptions are the options of a connection: a 2025 session's (named
// by its Mcp-Session-Id) or, with id "", the stateless requests'.
func (s *Server) connOptions(session rpc.Sink, id string) rpc.ConnOptions {
	t := trace.WithTransport(context.Background(), httpTransport(id))
	return rpc.ConnOptions{Limit: s.limit, Grace: s.opts.Grace, Log: s.log, Session: session, Values: t}
}

// httpTransport is what the spans of this transport's requests say about
// it (net/http serves HTTP/1.1 here: no TLS, no h2c); id is the 2025
// session's Mcp-Session-Id, "" for none.
func httpTransport(id string) trace.Transport {
	return trace.Transport{Network: "tcp", Protocol: "http", Version: "1.1", SessionID: id}
}

// Handler is the HTTP handler: the MCP endpoint at Path behind the Host,
// Origin and bearer checks (webguard).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(Path, s.endpoint)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.guard.HostAllowed(r.Host) {
			refuse(w, http.StatusForbidden, rpc.NewError(rpc.CodeInvalidRequest,
				fmt.Sprintf("Host %q is not this loopback server's (DNS rebinding protection); use http://127.0.0.1:%s%s", r.Host, s.guard.Port(), Path)))
			return
		}
		if !s.guard.OriginAllowed(r.Header.Get("Origin")) {
			refuse(w, http.StatusForbidden, rpc.NewError(rpc.CodeInvalidRequest,
				fmt.Sprintf("origin %q may not use this server (DNS rebinding protection); serve it with --allow-origin %s to allow it", r.Header.Get("Origin"), r.Header.Get("Origin"))))
			return
		}
		if s.opts.AuthToken == "" || !webguard.BearerOK(r.Header.Get("Authorization"), s.opts.AuthToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost"`)
			// Nothing of an unauthorized request's body is read, not even
			// to keep the connection.
			w.Header().Set("Connection", "close")
			http.Error(w, "missing or wrong bearer token: send Authorization: Bearer <token>, the token of this agent's server "+
				"(toolhost mcp-config --agent A --project-dir D --http-headers prints the header)", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// refuse answers a request that is not served with an error body without id.
func refuse(w http.ResponseWriter, status int, e *rpc.Error) {
	writeJSON(w, status, rpc.EncodeError(nil, e))
}

func (s *Server) endpoint(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.get(w, r)
	case http.MethodDelete:
		s.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "the MCP endpoint takes POST (and GET or DELETE within a 2025 session)", http.StatusMethodNotAllowed)
	}
}

// readBody reads a request body within the body timeout and the size cap;
// the read deadline is lifted before the call runs, so only the upload is
// bounded, never the work.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, *rpc.Error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(s.opts.MaxMessage)+1))
	if err != nil || len(body) > s.opts.MaxMessage {
		// net/http would read what is left of the body to keep the
		// connection: with the deadline passed, closing the body gives
		// that up at once, and the connection ends after the answer.
		_ = rc.SetReadDeadline(time.Now())
		_ = r.Body.Close()
		w.Header().Set("Connection", "close")
	} else {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return nil, http.StatusRequestTimeout, rpc.NewError(rpc.CodeInvalidRequest,
			fmt.Sprintf("the request body did not arrive within %s; send the whole message at once", s.opts.BodyTimeout))
	case err != nil:
		return nil, http.StatusBadRequest, rpc.NewError(rpc.CodeInvalidRequest, "reading the request body: "+err.Error())
	case len(bytes.TrimRight(body, "\r\n")) > s.opts.MaxMessage:
		e := rpc.NewError(rpc.CodeInvalidRequest, fmt.Sprintf("message exceeds the %d-byte limit; send smaller arguments (large content belongs in a file referenced by path)", s.opts.MaxMessage))
		return body[:min(len(body), 4<<10)], http.StatusRequestEntityTooLarge, e
	}
	return body, 0, nil
}

// jsonBody reports whether a POST says its body is JSON. Anything else —
// text/plain and form encodings above all, which a page of another site may
// send without asking first — is not a message of this transport.
func jsonBody(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// noSession is the answer to a 2025 request that names no session: those
// revisions begin one with initialize and carry it on every later request.
func noSession() *rpc.Error {
	return rpc.NewError(rpc.CodeInvalidRequest, "Mcp-Session-Id header required: a 2025 client initializes first and sends the Mcp-Session-Id it got on every later request (a 2026-07-28 request needs none)")
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	if !jsonBody(r) {
		refuse(w, http.StatusUnsupportedMediaType, rpc.NewError(rpc.CodeInvalidRequest,
			fmt.Sprintf("Content-Type %q is not served: send each message as Content-Type: application/json", r.Header.Get("Content-Type"))))
		return
	}
	body, status, e := s.readBody(w, r)
	if e != nil {
		var id json.RawMessage
		if status == http.StatusRequestEntityTooLarge {
			id = rpc.LeadingID(body)
		}
		writeJSON(w, status, rpc.EncodeError(id, e))
		return
	}
	var m rpc.Message
	if id, e := rpc.Decode(body, &m); e != nil {
		writeJSON(w, http.StatusBadRequest, rpc.EncodeError(id, e))
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if m.Method == nil || len(m.ID) == 0 {
		// A response to one of our requests, or a notification: accepted,
		// with no body.
		conn := s.anon
		switch {
		case sid != "":
			sess := s.session(sid)
			if sess == nil {
				refuse(w, http.StatusNotFound, rpc.NewError(rpc.CodeInvalidRequest, "no such session: initialize again (or send 2026-07-28 requests, which need none)"))
				return
			}
			conn = sess.conn
		case !server.IsPerRequest(server.ProtocolVersionOf(m.Params)) && !server.IsPerRequest(r.Header.Get("MCP-Protocol-Version")):
			refuse(w, http.StatusBadRequest, noSession())
			return
		}
		sink := newPostSink(w, r)
		conn.Dispatch(&m, sink)
		if !sink.answered && sink.replied == nil {
			w.WriteHeader(http.StatusAccepted)
		}
		return
	}
	version := server.ProtocolVersionOf(m.Params)
	sink := newPostSink(w, r)
	switch {
	case version != "" && !isNegotiated(version):
		if e := perRequestHeaders(r, &m, version); e != nil {
			writeJSON(w, http.StatusBadRequest, rpc.EncodeError(m.ID, e))
			return
		}
		// Stateless: no session is minted or read, and the request ends
		// (cancelled) when its client goes away.
		s.stateless.Serve(trace.WithTransport(r.Context(), httpTransport("")), &m, sink)
		return
	case server.IsPerRequest(r.Header.Get("MCP-Protocol-Version")):
		writeJSON(w, http.StatusBadRequest, rpc.EncodeError(m.ID, headerMismatch(fmt.Sprintf(
			"MCP-Protocol-Version header value %q does not match the body, whose _meta names no %q", server.PerRequestVersion, server.MetaProtocolVersion))))
		return
	}
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !isNegotiated(v) {
		writeJSON(w, http.StatusBadRequest, rpc.EncodeError(m.ID, rpc.NewError(rpc.CodeInvalidRequest,
			fmt.Sprintf("unsupported MCP-Protocol-Version %q: this server speaks %s", v, strings.Join(server.SupportedVersions, ", ")))))
		return
	}
	var conn *rpc.Conn
	switch {
	case sid != "":
		sess := s.session(sid)
		if sess == nil {
			refuse(w, http.StatusNotFound, rpc.NewError(rpc.CodeInvalidRequest, "no such session (it ended or the server restarted): initialize again"))
			return
		}
		conn = sess.conn
	case startsSession(*m.Method):
		sess, e := s.newSession()
		if e != nil {
			writeJSON(w, http.StatusServiceUnavailable, rpc.EncodeError(m.ID, e))
			return
		}
		w.Header().Set("Mcp-Session-Id", sess.id)
		conn = sess.conn
		defer func() {
			if sink.replied != nil {
				s.endSession(sess)
			}
		}()
	default:
		writeJSON(w, http.StatusBadRequest, rpc.EncodeError(m.ID, noSession()))
		return
	}
	conn.Dispatch(&m, sink)
	select {
	case <-sink.done:
	case <-r.Context().Done():
		// A 2025 client that drops the connection has not cancelled
		// (2025-11-25: it sends notifications/cancelled for that); the call
		// runs on, and its answer, which nothing can carry, is dropped.
		sink.abandon()
	}
}

// startsSession reports whether a 2025 request begins a session.
func startsSession(name string) bool {
	m, ok := server.Lookup(name)
	return ok && m.StartsSession
}

func isNegotiated(v string) bool {
	return v != "" && !server.IsPerRequest(v) && slices.Contains(server.SupportedVersions, v)
}

func headerMismatch(msg string) *rpc.Error {
	return &rpc.Error{Code: server.CodeHeaderMismatch, Message: "Header mismatch: " + msg, Kind: rpc.KindBadRequest}
}

// perRequestHeaders checks the request headers a 2026-07-28 POST must carry
// against its body: MCP-Protocol-Version, Mcp-Method and, for the methods
// that name something, Mcp-Name.
func perRequestHeaders(r *http.Request, m *rpc.Message, version string) *rpc.Error {
	if !server.IsPerRequest(version) {
		return nil // unsupported: the method surface answers with the list
	}
	if got := r.Header.Get("MCP-Protocol-Version"); got != version {
		return headerMismatch(fmt.Sprintf("MCP-Protocol-Version header value %q does not match body value %q", got, version))
	}
	if got := r.Header.Get("Mcp-Method"); got != *m.Method {
		return headerMismatch(fmt.Sprintf("Mcp-Method header value %q does not match body value %q", got, *m.Method))
	}
	method, _ := server.Lookup(*m.Method)
	if method == nil || method.NameParam == "" {
		return nil // names nothing (an unknown method: the method surface answers)
	}
	field := method.NameParam
	var p map[string]json.RawMessage
	_ = json.Unmarshal(m.Params, &p)
	var want string
	_ = json.Unmarshal(p[field], &want)
	raw := r.Header.Get("Mcp-Name")
	got, ok := decodeHeaderValue(raw)
	if raw == "" || !ok {
		return headerMismatch(fmt.Sprintf("the Mcp-Name header is missing or malformed; it must carry params.%s (%q)", field, want))
	}
	if got != want {
		return headerMismatch(fmt.Sprintf("Mcp-Name header value %q does not match body value %q", got, want))
	}
	return nil
}

// decodeHeaderValue undoes the Base64 sentinel encoding (=?base64?…?=) of
// a header value that is not plain ASCII.
func decodeHeaderValue(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}

func acceptsSSE(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		if strings.Contains(a, "text/event-stream") || strings.Contains(a, "*/*") {
			return true
		}
	}
	return false
}

func (s *Server) session(id string) *session {
	s.mu.Lock()
	sess := s.sessions[id]
	s.mu.Unlock()
	if sess != nil {
		sess.touch()
	}
	return sess
}

// sessionHandler is the method surface as one 2025 session's connection
// sees it: rpc.Handler only, so draining the session does not drain the
// surface (rpc.Drainer), which every client shares.
type sessionHandler struct{ rpc.Handler }

func (s *Server) newSession() (*session, *rpc.Error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, rpc.NewError(rpc.CodeInternalError, "session id: "+err.Error())
	}
	sess := &session{id: hex.EncodeToString(b), stream: &streamSink{}, last: time.Now()}
	// A session's connection drains when the session ends, which is not a
	// shutdown of the method surface: it must not end the other clients'
	// subscriptions, so the session's connection does not see the
	// surface's Drainer.
	sess.conn = rpc.NewConn(sessionHandler{s.h}, s.connOptions(sess.stream, sess.id))
	var gone []*session
	s.mu.Lock()
	if s.stopping.Err() != nil {
		s.mu.Unlock()
		return nil, rpc.NewError(rpc.CodeShuttingDown, "server is shutting down")
	}
	for id, old := range s.sessions {
		old.mu.Lock()
		idle := time.Since(old.last) > sessionIdle
		old.mu.Unlock()
		if idle {
			gone = append(gone, old)
			delete(s.sessions, id)
		}
	}
	if len(s.sessions) >= maxSessions {
		var oldest *session
		for _, old := range s.sessions {
			if oldest == nil || old.last.Before(oldest.last) {
				oldest = old
			}
		}
		gone = append(gone, oldest)
		delete(s.sessions, oldest.id)
	}
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	for _, old := range gone {
		s.closeSession(old)
	}
	return sess, nil
}

func (s *Server) endSession(sess *session) {
	s.mu.Lock()
	delete(s.sessions, sess.id)
	s.mu.Unlock()
	s.closeSession(sess)
}

func (s *Server) closeSession(sess *session) {
	s.h.Forget(sess.conn.SessionPeer())
	sess.stream.close()
	go func() {
		sess.conn.Drain()
		sess.conn.Close()
	}()
}

// get opens a 2025 session's stream of messages that relate to no
// request. 2026-07-28 has none (subscriptions/listen replaces it): 405.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		w.Header().Set("Allow", "POST")
		http.Error(w, "no GET stream without a 2025 session; a 2026-07-28 client opens subscriptions/listen with a POST", http.StatusMethodNotAllowed)
		return
	}
	sess := s.session(sid)
	if sess == nil {
		http.Error(w, "no such session: initialize again", http.StatusNotFound)
		return
	}
	if !acceptsSSE(r) {
		http.Error(w, "the GET stream is text/event-stream; send Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	g := &getStream{w: w, rc: http.NewResponseController(w), done: make(chan struct{})}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	// Attached before the client sees the stream open, so nothing it does
	// next (a DELETE) can miss it.
	sess.stream.attach(g)
	defer sess.stream.detach(g)
	sess.stream.mu.Lock()
	w.WriteHeader(http.StatusOK)
	_ = g.rc.Flush()
	sess.stream.mu.Unlock()
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.stopping.Done():
			return
		case <-g.done:
			return
		case <-t.C:
			sess.stream.comment(g)
		}
	}
}

// delete ends a 2025 session.
func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		w.Header().Set("Allow", "POST")
		http.Error(w, "DELETE ends a 2025 session; send its Mcp-Session-Id", http.StatusMethodNotAllowed)
		return
	}
	sess := s.session(sid)
	if sess == nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	s.endSession(sess)
	w.WriteHeader(http.StatusNoContent)
}

// Serve serves on ln until ctx is done, then shuts down: no new request is
// taken, in-flight calls may finish within the grace period (those still
// running then are cancelled and answered saying so), open streams end.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.guard.Bind(ln.Addr())
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.opts.BodyTimeout, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.stop()
	conns := []*rpc.Conn{s.stateless, s.anon}
	for _, sess := range s.sessions {
		conns = append(conns, sess.conn)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() { defer wg.Done(); c.Drain() }()
	}
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	for _, c := range conns {
		c.Close()
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// URL is the endpoint URL for a listener address.
func URL(addr net.Addr) string {
	return "http://" + strings.TrimSuffix(addr.String(), "/") + Path
}
