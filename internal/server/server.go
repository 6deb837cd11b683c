package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/wirejson"
)

// SupportedVersions are the MCP protocol revisions served, newest first.
var SupportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// DefaultPageSize is the number of tools per tools/list page.
const DefaultPageSize = 100

// Server is the MCP method surface of one session.
type Server struct {
	Engine   *engine.Engine
	Name     string
	Version  string
	PageSize int
	Log      zerolog.Logger
	// Visible reports whether a tool is listed for this session (the agent's
	// toolPolicy and the policy permission decide).
	Visible func(name string) bool

	mu        sync.Mutex
	peer      rpc.Peer
	listMu    sync.Mutex
	listCache atomic.Pointer[listing]
	logLevel  atomic.Int32
	// formElicit is set by initialize when the client can answer form-mode
	// elicitation/create; tools/call reads it on every call.
	formElicit atomic.Bool
}

type listing struct {
	entries []json.RawMessage
	gen     string
	// sum covers the whole content (schemas, annotations), not just names.
	sum uint64
}

// ToolsChanged recomputes the visible tools after the registry or the
// policy changed and, when the list differs from the one served before,
// sends notifications/tools/list_changed to the client (once it is
// initialized or has listed tools).
func (s *Server) ToolsChanged() {
	s.listMu.Lock()
	old := s.listCache.Load()
	l := s.build()
	s.listCache.Store(l)
	s.listMu.Unlock()
	if old != nil && old.sum == l.sum {
		return
	}
	s.mu.Lock()
	p := s.peer
	s.mu.Unlock()
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Notify(ctx, "notifications/tools/list_changed", nil); err != nil {
		s.Log.Debug().Err(err).Msg("tools/list_changed not delivered")
	}
}

// rememberPeer keeps the connection to notify it of list changes later.
func (s *Server) rememberPeer(p rpc.Peer) {
	s.mu.Lock()
	s.peer = p
	s.mu.Unlock()
}

func (s *Server) tools() *listing {
	if l := s.listCache.Load(); l != nil {
		return l
	}
	s.listMu.Lock()
	defer s.listMu.Unlock()
	if l := s.listCache.Load(); l != nil {
		return l
	}
	l := s.build()
	s.listCache.Store(l)
	return l
}

// build computes the listing from the registry; the caller holds listMu so
// a listing built before a change never replaces one built after it.
func (s *Server) build() *listing {
	l := &listing{}
	sum := fnv.New64a()
	var names []string
	for _, e := range s.Engine.Registry.List() {
		if s.Visible != nil && !s.Visible(e.Spec.Name) {
			continue
		}
		names = append(names, e.Spec.Name)
		b, err := json.Marshal(ToolEntryOf(e.Spec))
		if err != nil {
			s.Log.Error().Err(err).Str("tool", e.Spec.Name).Msg("encode tool entry")
			continue
		}
		l.entries = append(l.entries, b)
		sum.Write(b)
	}
	gen := fnv.New64a()
	gen.Write([]byte(strings.Join(names, ",")))
	l.gen = strconv.FormatUint(gen.Sum64(), 36)
	l.sum = sum.Sum64()
	return l
}

// ToolEntry is one tools/list entry.
type ToolEntry struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  tool.Annotations `json:"annotations"`
}

// ToolEntryOf returns the tools/list entry for a spec.
func ToolEntryOf(s *tool.Spec) ToolEntry {
	return ToolEntry{Name: s.Name, Title: s.Title, Description: s.Description, InputSchema: s.InputSchema,
		OutputSchema: s.OutputSchema, Annotations: s.Annotations()}
}

// Handle implements rpc.Handler.
func (s *Server) Handle(ctx context.Context, peer rpc.Peer, method string, params json.RawMessage) (any, error) {
	switch method {
	case "initialize":
		return s.initialize(params)
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		// A client that skips initialize still gets list_changed once it
		// has seen a list.
		s.rememberPeer(peer)
		return s.listTools(params)
	case "tools/call":
		return s.callTool(ctx, peer, params)
	case "logging/setLevel":
		return s.setLevel(params)
	case "resources/list":
		return map[string]any{"resources": []any{}}, nil
	case "prompts/list":
		return map[string]any{"prompts": []any{}}, nil
	}
	return nil, rpc.NewError(rpc.CodeMethodNotFound, fmt.Sprintf("method %q not found", method))
}

// Notification implements rpc.Handler.
func (s *Server) Notification(_ context.Context, peer rpc.Peer, method string, _ json.RawMessage) {
	if method == "notifications/initialized" {
		s.rememberPeer(peer)
	}
}

func (s *Server) initialize(params json.RawMessage) (any, error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Elicitation json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if err := json.Unmarshal(orEmpty(params), &p); err != nil {
		return nil, rpc.NewError(rpc.CodeInvalidParams, "initialize: "+err.Error())
	}
	version := SupportedVersions[0]
	if slices.Contains(SupportedVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s.formElicit.Store(formElicitation(p.Capabilities.Elicitation))
	s.Log.Info().Str("event", "initialize").Str("client", p.ClientInfo.Name).Str("client_version", p.ClientInfo.Version).
		Str("requested", p.ProtocolVersion).Str("negotiated", version).Msg("client initialized")
	return map[string]any{
		"protocolVersion": version,
		"capabilities": map[string]any{
			"tools":   map[string]any{"listChanged": true},
			"logging": map[string]any{},
		},
		"serverInfo":   map[string]any{"name": s.Name, "version": s.Version},
		"instructions": "toolhost serves the devloop tools of one agent session. Every path argument is relative to the project dir. A result with isError explains what to change.",
	}, nil
}

func orEmpty(p json.RawMessage) json.RawMessage {
	if len(p) == 0 || string(p) == "null" {
		return json.RawMessage("{}")
	}
	return p
}

func (s *Server) listTools(params json.RawMessage) (any, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := json.Unmarshal(orEmpty(params), &p); err != nil {
		return nil, rpc.NewError(rpc.CodeInvalidParams, "tools/list: "+err.Error())
	}
	l := s.tools()
	size := s.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	start := 0
	if p.Cursor != nil {
		n, err := decodeCursor(*p.Cursor, l.gen)
		if err != nil || n > len(l.entries) {
			return nil, rpc.NewError(rpc.CodeInvalidParams, "tools/list: invalid cursor; start again without a cursor")
		}
		start = n
	}
	end := min(start+size, len(l.entries))
	res := struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor,omitempty"`
	}{Tools: l.entries[start:end]}
	if res.Tools == nil {
		res.Tools = []json.RawMessage{}
	}
	if end < len(l.entries) {
		res.NextCursor = encodeCursor(end, l.gen)
	}
	return res, nil
}

func encodeCursor(offset int, gen string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1:" + gen + ":" + strconv.Itoa(offset)))
}

func decodeCursor(c, gen string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, err
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 3 || parts[0] != "v1" || parts[1] != gen {
		return 0, fmt.Errorf("stale or foreign cursor")
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad offset")
	}
	return n, nil
}

type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

func (s *Server) callTool(ctx context.Context, peer rpc.Peer, params json.RawMessage) (any, error) {
	var p callParams
	if err := wirejson.Unmarshal(orEmpty(params), &p); err != nil {
		return nil, rpc.NewError(rpc.CodeInvalidParams, "tools/call: "+TypeError("params", err))
	}
	if p.Name == "" {
		return nil, rpc.NewError(rpc.CodeInvalidParams, "tools/call: missing tool name")
	}
	req := engine.Request{Tool: p.Name, Args: p.Arguments}
	if len(p.Meta) > 0 {
		if err := json.Unmarshal(p.Meta, &req.Meta); err != nil {
			return nil, rpc.NewError(rpc.CodeInvalidParams, "tools/call: "+TypeError(`"_meta"`, err))
		}
	}
	if tok := req.Meta.ProgressToken; len(tok) > 0 && string(tok) != "null" {
		req.Progress = progressSender(ctx, peer, tok)
	}
	if s.formElicit.Load() {
		req.Elicit = elicitor(peer)
	}
	out := s.Engine.Call(ctx, req)
	return s.result(ctx, peer, out)
}

// TypeError says which field of the params had which JSON type where
// another was wanted, in JSON terms rather than Go ones; whole is the name
// of the value decoded.
func TypeError(whole string, err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "params are not valid: " + err.Error()
	}
	name := whole
	if te.Field != "" {
		name = strconv.Quote(te.Field)
		if whole != "params" {
			name = strings.TrimSuffix(whole, `"`) + "." + te.Field + `"`
		}
	}
	return fmt.Sprintf("%s is %s, want %s", name, article(te.Value), article(jsonType(te.Type.Kind())))
}

func jsonType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	case reflect.Interface:
		return "value"
	}
	return "number"
}

func article(t string) string {
	switch t {
	case "array", "object":
		return "an " + t
	}
	return "a " + t
}

// formElicitation reports whether the elicitation capability a client
// declared lets it answer form-mode elicitation/create: an empty object
// (every revision) or one naming "form" (2025-11-25, where a client may
// offer only "url"). An absent capability (or null) does not.
func formElicitation(elicitation json.RawMessage) bool {
	var modes map[string]json.RawMessage
	if json.Unmarshal(elicitation, &modes) != nil || modes == nil {
		return false
	}
	_, form := modes["form"]
	return len(modes) == 0 || form
}

// elicitor asks the client's human through elicitation/create.
func elicitor(peer rpc.Peer) engine.ElicitFunc {
	return func(ctx context.Context, message string, schema any) (engine.Elicitation, error) {
		var ans engine.Elicitation
		err := peer.Call(ctx, "elicitation/create", map[string]any{"message": message, "requestedSchema": schema}, &ans)
		return ans, err
	}
}

// progressSender returns the ProgressFunc that sends notifications/progress
// for token (callctx passes it increasing values only).
func progressSender(ctx context.Context, peer rpc.Peer, token json.RawMessage) func(float64, float64, string) {
	return func(progress, total float64, message string) {
		n := map[string]any{"progressToken": token, "progress": progress}
		if total > 0 {
			n["total"] = total
		}
		if message != "" {
			n["message"] = message
		}
		_ = peer.Notify(ctx, "notifications/progress", n)
	}
}

// result maps an outcome to the wire: the one place that decides between a
// protocol error and an isError result.
func (s *Server) result(ctx context.Context, peer rpc.Peer, out *engine.Outcome) (any, error) {
	if out.Kind == fault.UnknownTool {
		return nil, rpc.NewError(rpc.CodeInvalidParams, out.Message)
	}
	if out.IsError {
		s.clientLog(ctx, peer, out)
		return map[string]any{
			"content": []any{map[string]any{"type": "text", "text": out.Message}},
			"isError": true,
		}, nil
	}
	if len(out.Result.Raw) > 0 {
		return out.Result.Raw, nil
	}
	return successResult(out.Result.Structured), nil
}

// successResult encodes {content:[{type:text,text:S}], structuredContent:S,
// isError:false} for the structured JSON S directly: this runs on every call,
// and S is already valid compact JSON.
func successResult(structured json.RawMessage) json.RawMessage {
	text, _ := json.Marshal(string(structured))
	b := make([]byte, 0, 2*len(structured)+80)
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = append(b, text...)
	b = append(b, `}],"structuredContent":`...)
	b = append(b, structured...)
	b = append(b, `,"isError":false}`...)
	return b
}

// Log levels of MCP logging/setLevel, in order.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func (s *Server) setLevel(params json.RawMessage) (any, error) {
	var p struct {
		Level string `json:"level"`
	}
	_ = json.Unmarshal(orEmpty(params), &p)
	i := slices.Index(logLevels, p.Level)
	if i < 0 {
		return nil, rpc.NewError(rpc.CodeInvalidParams, fmt.Sprintf("logging/setLevel: level must be one of %s", strings.Join(logLevels, ", ")))
	}
	s.logLevel.Store(int32(i) + 1)
	return struct{}{}, nil
}

// clientLog sends a notifications/message about a failed call when the
// client asked for logs at that level.
func (s *Server) clientLog(ctx context.Context, peer rpc.Peer, out *engine.Outcome) {
	set := s.logLevel.Load()
	if set == 0 {
		return
	}
	level := "warning"
	if out.Status == audit.StatusError {
		level = "error"
	}
	if int32(slices.Index(logLevels, level))+1 < set {
		return
	}
	_ = peer.Notify(ctx, "notifications/message", map[string]any{
		"level": level, "logger": "toolhost",
		"data": map[string]any{"status": out.Status, "kind": out.Kind, "message": out.Message},
	})
}
