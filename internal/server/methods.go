package server

import (
	"context"
	"fmt"

	"github.com/toolhost/toolhost/internal/rpc"
)

// Revisions are the protocol revisions a method is served in.
type Revisions uint8

const (
	// PerRequest is 2026-07-28, where every request names its revision
	// and the client's capabilities in _meta and stands alone.
	PerRequest Revisions = 1 << iota
	// Negotiated are the 2025 revisions (2025-03-26 … 2025-11-25), chosen
	// once for a connection or HTTP session by initialize.
	Negotiated
)

// Method is one row of the method table: a method toolhost serves, the
// revisions it is served in and its handler. Handle dispatches on it and
// the HTTP transport reads it (which params field a 2026-07-28 request's
// Mcp-Name header repeats, which method begins a 2025 session), so no
// method name is spelled anywhere else.
type Method struct {
	Name      string
	Revisions Revisions
	// NameParam is the params field a 2026-07-28 request's Mcp-Name
	// header repeats; empty when the method names nothing.
	NameParam string
	// StartsSession marks the request that begins a 2025 session
	// (initialize): over HTTP its answer carries a new Mcp-Session-Id.
	StartsSession bool
	// ownMeta: the handler decodes its params and _meta in one pass (the
	// hot path, and initialize, which selects the 2025 rules whatever its
	// _meta says), so Handle does not read the revision first.
	ownMeta bool
	// outside answers a request of a revision the method is not served
	// in, when there is more to say than "not found".
	outside func(method string) error
	serve   func(s *Server, ctx context.Context, peer rpc.Peer, req rpc.Request, ri reqInfo) (any, error)
}

// methods is the table; Lookup finds a row.
var methods = []Method{
	{Name: "initialize", Revisions: Negotiated, StartsSession: true, ownMeta: true,
		serve: func(s *Server, ctx context.Context, _ rpc.Peer, req rpc.Request, _ reqInfo) (any, error) {
			return s.initialize(ctx, req.Params)
		}},
	{Name: "tools/call", Revisions: PerRequest | Negotiated, NameParam: "name", ownMeta: true,
		serve: func(s *Server, ctx context.Context, peer rpc.Peer, req rpc.Request, _ reqInfo) (any, error) {
			return s.callTool(ctx, peer, req)
		}},
	{Name: "server/discover", Revisions: PerRequest,
		outside: func(method string) error {
			return missingMeta(fmt.Sprintf("%s is a %s request: send _meta %q (e.g. %q) and %q", method, PerRequestVersion, MetaProtocolVersion, PerRequestVersion, MetaClientCapabilities))
		},
		serve: func(s *Server, _ context.Context, _ rpc.Peer, _ rpc.Request, _ reqInfo) (any, error) {
			return s.discover(), nil
		}},
	{Name: "tools/list", Revisions: PerRequest | Negotiated,
		serve: func(s *Server, ctx context.Context, peer rpc.Peer, req rpc.Request, ri reqInfo) (any, error) {
			if !ri.perRequest {
				// A 2025 client that skips initialize still gets
				// list_changed once it has seen a list.
				s.subs.addNegotiated(peer.Session())
			}
			return s.listTools(ctx, ri, req.Params)
		}},
	{Name: "resources/list", Revisions: PerRequest | Negotiated,
		serve: func(s *Server, _ context.Context, _ rpc.Peer, _ rpc.Request, ri reqInfo) (any, error) {
			return s.emptyList(ri, "resources"), nil
		}},
	{Name: "prompts/list", Revisions: PerRequest | Negotiated,
		serve: func(s *Server, _ context.Context, _ rpc.Peer, _ rpc.Request, ri reqInfo) (any, error) {
			return s.emptyList(ri, "prompts"), nil
		}},
	{Name: "subscriptions/listen", Revisions: PerRequest,
		serve: func(s *Server, ctx context.Context, peer rpc.Peer, req rpc.Request, _ reqInfo) (any, error) {
			return s.listen(ctx, peer, req.ID, req.Params)
		}},
	{Name: "ping", Revisions: Negotiated,
		serve: func(*Server, context.Context, rpc.Peer, rpc.Request, reqInfo) (any, error) { return struct{}{}, nil }},
	{Name: "logging/setLevel", Revisions: Negotiated,
		serve: func(s *Server, _ context.Context, _ rpc.Peer, req rpc.Request, _ reqInfo) (any, error) {
			return s.setLevel(req.Params)
		}},
}

var methodIndex = func() map[string]*Method {
	m := make(map[string]*Method, len(methods))
	for i := range methods {
		m[methods[i].Name] = &methods[i]
	}
	return m
}()

// Lookup returns the row of a method toolhost serves in some revision.
func Lookup(name string) (*Method, bool) {
	m, ok := methodIndex[name]
	return m, ok
}

// servedIn reports whether m is served in the revision ri speaks.
func (m *Method) servedIn(ri reqInfo) bool {
	if ri.perRequest {
		return m.Revisions&PerRequest != 0
	}
	return m.Revisions&Negotiated != 0
}
