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

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/trace"
)

// DefaultPageSize is the number of tools per tools/list page.
const DefaultPageSize = 100

// Cache hints of the 2026-07-28 list results: a tool list stays fresh a
// minute (list_changed on a subscription invalidates it sooner); it is
// private because it is filtered for the agent this server serves.
const (
	listTTLMS      = 60_000
	discoverTTLMS  = 60_000
	listCacheScope = "private"
)

// Instructions is what the server tells a client's model about itself.
const Instructions = "toolhost serves the devloop tools of one agent session. Every path argument is relative to the project dir. A result with isError explains what to change."

// Server is the MCP method surface of one session, served to every
// transport and every protocol revision.
type Server struct {
	Engine   *engine.Engine
	Name     string
	Version  string
	PageSize int
	Log      zerolog.Logger
	// Visible reports whether a tool is listed for this session (the agent's
	// toolPolicy and the policy permission decide).
	Visible func(name string) bool
	// ToolsReady blocks, bounded, until the tools still being discovered
	// (upstream servers) are registered: tools/list waits for it, nothing
	// else does (initialize and built-in calls never wait for discovery).
	ToolsReady func(ctx context.Context)
	// Trace is the session's telemetry: a span per request answered here
	// (nil: none).
	Trace *trace.Session

	listMu    sync.Mutex
	listCache atomic.Pointer[listing]
	// logLevel is the level 2025 logging/setLevel chose (index into
	// logLevels, plus one; zero sends no log notifications).
	logLevel atomic.Int32
	// formElicit is set by a 2025 initialize when the client can answer
	// form-mode elicitation/create; tools/call reads it on every call.
	formElicit atomic.Bool
	// negotiatedVersion is the revision the last initialize negotiated (for
	// the spans of 2025 requests, which do not name it).
	negotiatedVersion atomic.Pointer[string]

	once sync.Once
	// serverInfo is the Implementation object, encoded once; perRequestTail
	// closes a 2026-07-28 result: resultType and the serverInfo _meta.
	serverInfo     json.RawMessage
	perRequestTail []byte

	subs subscriptions
}

func (s *Server) init() {
	s.once.Do(func() {
		s.serverInfo, _ = json.Marshal(map[string]string{"name": s.Name, "version": s.Version})
		s.perRequestTail = fmt.Appendf(nil, `,"resultType":"complete","_meta":{%q:%s}}`, MetaServerInfo, s.serverInfo)
		s.subs.init()
	})
}

type listing struct {
	entries []json.RawMessage
	gen     string
	// sum covers the whole content (schemas, annotations), not just names.
	sum uint64
}

// ToolsChanged recomputes the visible tools after the registry or the
// policy changed and, when the list differs from the one served before,
// sends notifications/tools/list_changed to the 2025 clients that know
// the list and to every subscriptions/listen stream that asked for it.
// Before any list was served there is nothing to compare with and no one
// to tell: the first tools/list builds it (start-up does not pay for it).
func (s *Server) ToolsChanged() {
	s.init()
	s.listMu.Lock()
	old := s.listCache.Load()
	if old == nil {
		s.listMu.Unlock()
		return
	}
	l := s.build()
	s.listCache.Store(l)
	s.listMu.Unlock()
	if old != nil && old.sum == l.sum {
		return
	}
	s.subs.toolsChanged(s.Log)
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

// Handle implements rpc.Handler: every MCP method, for every revision.
func (s *Server) Handle(ctx context.Context, peer rpc.Peer, req rpc.Request) (res any, err error) {
	s.init()
	if s.Trace != nil {
		var r *trace.Request
		ctx, r = s.Trace.Request(ctx, req.Method, req.ID)
		defer func() { endRequest(r, err) }()
	}
	m, known := Lookup(req.Method)
	if known && m.ownMeta {
		return m.serve(s, ctx, peer, req, reqInfo{})
	}
	meta, err := metaOnly(req.Params)
	if err != nil {
		return nil, err
	}
	ri, err := era(meta)
	if err != nil {
		return nil, err
	}
	if s.Trace != nil {
		ctx = trace.Begin(ctx, trace.Parent{Traceparent: meta.Traceparent, Tracestate: meta.Tracestate}, s.version(ri), "")
	}
	switch {
	case known && m.servedIn(ri):
		return m.serve(s, ctx, peer, req, ri)
	case known && m.outside != nil:
		return nil, m.outside(req.Method)
	}
	return nil, notFound(req.Method, ri.perRequest)
}

// notFound is -32601; a 2026-07-28 request gets it with HTTP 404, as the
// Streamable HTTP binding says.
func notFound(method string, perRequest bool) error {
	e := rpc.NewError(rpc.CodeMethodNotFound, fmt.Sprintf("method %q not found", method))
	if perRequest {
		e.Kind = rpc.KindUnknownMethod
		switch method {
		case "ping":
			e.Message += fmt.Sprintf(" in protocol revision %s (removed there: every request stands alone, no connection to keep alive)", PerRequestVersion)
		case "logging/setLevel":
			e.Message += fmt.Sprintf(" in protocol revision %s (removed there: a log level goes in each request's _meta %q)", PerRequestVersion, MetaLogLevel)
		}
	}
	return e
}

// Notification implements rpc.Handler.
func (s *Server) Notification(_ context.Context, peer rpc.Peer, method string, _ json.RawMessage) {
	if method == "notifications/initialized" {
		s.init()
		s.subs.addNegotiated(peer.Session())
	}
}

// Forget drops a 2025 session's peer (its HTTP session ended).
func (s *Server) Forget(p rpc.Peer) {
	s.init()
	s.subs.removeNegotiated(p)
}

// Draining implements rpc.Drainer: open subscriptions end gracefully when
// shutdown starts instead of holding the drain for its whole grace.
func (s *Server) Draining() {
	s.init()
	s.subs.close()
}

func (s *Server) capabilities() map[string]any {
	return map[string]any{
		"tools":   map[string]any{"listChanged": true},
		"logging": map[string]any{},
	}
}

// version is the revision a request speaks, for its span: its own, or
// the one the last initialize negotiated.
func (s *Server) version(ri reqInfo) string {
	if ri.perRequest {
		return PerRequestVersion
	}
	if v := s.negotiatedVersion.Load(); v != nil {
		return *v
	}
	return ""
}

// endRequest ends a request's span with the JSON-RPC error it is answered
// with (rpc turns an error that is not an *rpc.Error into -32603).
func endRequest(r *trace.Request, err error) {
	var re *rpc.Error
	switch {
	case err == nil:
		r.End(0, "")
	case errors.As(err, &re):
		r.End(re.Code, re.Message)
	default:
		r.End(rpc.CodeInternalError, err.Error())
	}
}

func (s *Server) initialize(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Meta            wireMeta `json:"_meta"`
		ProtocolVersion string   `json:"protocolVersion"`
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
	version := negotiatedVersions[0]
	if slices.Contains(negotiatedVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s.formElicit.Store(formElicitation(p.Capabilities.Elicitation))
	s.negotiatedVersion.Store(&version)
	if s.Trace != nil {
		trace.Begin(ctx, trace.Parent{Traceparent: p.Meta.Traceparent, Tracestate: p.Meta.Tracestate}, version, "")
	}
	s.Log.Info().Str("event", "initialize").Str("client", p.ClientInfo.Name).Str("client_version", p.ClientInfo.Version).
		Str("requested", p.ProtocolVersion).Str("negotiated", version).Msg("client initialized")
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    s.capabilities(),
		"serverInfo":      s.serverInfo,
		"instructions":    Instructions,
	}, nil
}

// discover answers server/discover: the revisions, capabilities, identity
// and instructions, with its cache hints.
func (s *Server) discover() any {
	return map[string]any{
		"resultType":        "complete",
		"supportedVersions": SupportedVersions,
		"capabilities":      s.capabilities(),
		"instructions":      Instructions,
		"_meta":             map[string]any{MetaServerInfo: s.serverInfo},
		"ttlMs":             discoverTTLMS,
		"cacheScope":        listCacheScope,
	}
}

func orEmpty(p json.RawMessage) json.RawMessage {
	if len(p) == 0 || string(p) == "null" {
		return json.RawMessage("{}")
	}
	return p
}

func (s *Server) emptyList(ri reqInfo, key string) any {
	r := map[string]any{key: []any{}}
	if ri.perRequest {
		s.addPerRequestFields(r)
		r["ttlMs"], r["cacheScope"] = listTTLMS, listCacheScope
	}
	return r
}

// addPerRequestFields adds what every 2026-07-28 result carries.
func (s *Server) addPerRequestFields(r map[string]any) {
	r["resultType"] = "complete"
	r["_meta"] = map[string]any{MetaServerInfo: s.serverInfo}
}

// listPage is one tools/list page; the 2026-07-28 fields are left out of
// a 2025 answer.
type listPage struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor string            `json:"nextCursor,omitempty"`
	ResultType string            `json:"resultType,omitempty"`
	TTLMS      *int              `json:"ttlMs,omitempty"`
	CacheScope string            `json:"cacheScope,omitempty"`
	Meta       map[string]any    `json:"_meta,omitempty"`
}

func (s *Server) listTools(ctx context.Context, ri reqInfo, params json.RawMessage) (any, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := json.Unmarshal(orEmpty(params), &p); err != nil {
		return nil, rpc.NewError(rpc.CodeInvalidParams, "tools/list: "+err.Error())
	}
	if s.ToolsReady != nil && p.Cursor == nil {
		s.ToolsReady(ctx)
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
	res := listPage{Tools: l.entries[start:end]}
	if res.Tools == nil {
		res.Tools = []json.RawMessage{}
	}
	if end < len(l.entries) {
		res.NextCursor = encodeCursor(end, l.gen)
	}
	if ri.perRequest {
		ttl := listTTLMS
		res.ResultType, res.TTLMS, res.CacheScope = "complete", &ttl, listCacheScope
		res.Meta = map[string]any{MetaServerInfo: s.serverInfo}
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

// Log levels of MCP logging, in order.
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
