package httpserve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/server"
	"github.com/toolhost/toolhost/internal/session"
)

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// Options configure the HTTP transport.
type Options struct {
	// AuthToken, when set, must come as "Authorization: Bearer <token>" on
	// every request.
	AuthToken string
	Version   string
	Log       zerolog.Logger
	// Grace bounds how long in-flight requests may finish at shutdown.
	Grace time.Duration
}

// Server is the go-sdk MCP server mirroring one session's visible tools.
type Server struct {
	sess *session.Session
	mcp  *mcp.Server
	opts Options

	mu      sync.Mutex
	offered map[string][32]byte // tool name → hash of its tools/list entry
}

// New builds the MCP server for s and keeps its tool list in step with the
// session's (upstream discovery, policy reloads).
func New(s *session.Session, o Options) *Server {
	h := &Server{sess: s, opts: o, offered: map[string][32]byte{}}
	h.mcp = mcp.NewServer(&mcp.Implementation{Name: "toolhost", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "toolhost serves the devloop tools of one agent session. Every path argument is relative to the project dir. A result with isError explains what to change.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	h.sync()
	s.OnToolsChanged(h.sync)
	return h
}

// sync makes the MCP server's tools match the session's visible tools; the
// go-sdk sends notifications/tools/list_changed to connected clients.
func (h *Server) sync() {
	h.mu.Lock()
	defer h.mu.Unlock()
	want := map[string]bool{}
	for _, e := range h.sess.Engine.Registry.List() {
		name := e.Spec.Name
		if !h.sess.Visible(name) {
			continue
		}
		want[name] = true
		entry := server.ToolEntryOf(e.Spec)
		b, err := json.Marshal(entry)
		if err != nil {
			h.opts.Log.Error().Err(err).Str("tool", name).Msg("encode tool entry")
			continue
		}
		sum := sha256.Sum256(b)
		if h.offered[name] == sum {
			continue
		}
		h.mcp.AddTool(mcpTool(entry), h.handler(name))
		h.offered[name] = sum
	}
	var gone []string
	for name := range h.offered {
		if !want[name] {
			gone = append(gone, name)
			delete(h.offered, name)
		}
	}
	if len(gone) > 0 {
		h.mcp.RemoveTools(gone...)
	}
}

func mcpTool(e server.ToolEntry) *mcp.Tool {
	t := &mcp.Tool{Name: e.Name, Title: e.Title, Description: e.Description, InputSchema: e.InputSchema}
	if len(e.OutputSchema) > 0 {
		t.OutputSchema = e.OutputSchema
	}
	a := e.Annotations
	t.Annotations = &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, IdempotentHint: a.IdempotentHint,
		DestructiveHint: &a.DestructiveHint, OpenWorldHint: &a.OpenWorldHint}
	return t
}

// handler runs a call through the session's engine, the one gate.
func (h *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := engine.Request{Tool: name, Args: req.Params.Arguments}
		if req.Params.Meta != nil {
			b, _ := json.Marshal(req.Params.Meta)
			if err := json.Unmarshal(b, &r.Meta); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: " + server.TypeError(`"_meta"`, err)}
			}
		}
		if tok := req.Params.GetProgressToken(); tok != nil {
			r.Progress = progress(ctx, req.Session, tok)
		}
		out := h.sess.Engine.Call(ctx, r)
		return result(out)
	}
}

// progress sends notifications/progress for tok (callctx passes it
// increasing values only).
func progress(ctx context.Context, ss *mcp.ServerSession, tok any) func(float64, float64, string) {
	return func(p, total float64, msg string) {
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: total, Message: msg})
	}
}

// result maps an outcome to a CallToolResult exactly as the stdio server
// does: an unknown tool is a protocol error, a rejection or failure is
// isError with the engine's message, an upstream result passes through.
func result(out *engine.Outcome) (*mcp.CallToolResult, error) {
	if out.Kind == fault.UnknownTool {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: out.Message}
	}
	if out.IsError {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Message}}, IsError: true}, nil
	}
	if len(out.Result.Raw) > 0 {
		var r mcp.CallToolResult
		if err := json.Unmarshal(out.Result.Raw, &r); err != nil {
			return nil, err
		}
		return &r, nil
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(out.Result.Structured)}},
		StructuredContent: json.RawMessage(out.Result.Structured),
	}, nil
}

// Handler is the HTTP handler: the MCP endpoint at Path behind the bearer
// check.
func (h *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.mcp }, nil))
	if h.opts.AuthToken == "" {
		return mux
	}
	want := []byte("Bearer " + h.opts.AuthToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost"`)
			http.Error(w, "missing or wrong bearer token: send Authorization: Bearer <the --auth-token value>", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Serve serves on ln until ctx is done, then shuts down: in-flight calls
// may finish within the grace period, while open SSE streams (GET), which
// would never go idle, are ended at once.
func (h *Server) Serve(ctx context.Context, ln net.Listener) error {
	stopping, stop := context.WithCancel(context.Background())
	defer stop()
	inner := h.Handler()
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			rctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(stopping, cancel)()
			r = r.WithContext(rctx)
		}
		inner.ServeHTTP(w, r)
	})}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace := h.opts.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	stop()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
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
