package server

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/rpc"
)

// TestMethodTable: every row is answered in the revisions it names and is
// unknown (404 over HTTP, for a 2026-07-28 request) in the others, unless
// the row says more; a method toolhost does not serve is unknown in both.
func TestMethodTable(t *testing.T) {
	t.Parallel()
	s := &Server{Engine: &engine.Engine{Registry: registry.New()}}
	perRequest := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // subscriptions/listen returns at once
	for _, m := range append(methods, Method{Name: "prompts/get"}) {
		if m.ownMeta {
			continue // decodes its own params: covered by its tests
		}
		for _, rev := range []struct {
			r      Revisions
			params string
		}{{PerRequest, perRequest}, {Negotiated, `{}`}} {
			_, err := s.Handle(ctx, &fakePeer{}, rpc.Request{ID: json.RawMessage("1"), Method: m.Name, Params: json.RawMessage(rev.params)})
			var re *rpc.Error
			unknown := errors.As(err, &re) && re.Code == rpc.CodeMethodNotFound
			switch served := m.Revisions&rev.r != 0; {
			case served && unknown:
				t.Errorf("%s (revisions %b): unknown in %b", m.Name, m.Revisions, rev.r)
			case !served && m.outside == nil && !unknown:
				t.Errorf("%s (revisions %b): answered in %b: %v", m.Name, m.Revisions, rev.r, err)
			case !served && unknown && (re.Kind == rpc.KindUnknownMethod) != (rev.r == PerRequest):
				t.Errorf("%s in %b: kind %d", m.Name, rev.r, re.Kind)
			}
		}
	}
	if m, ok := Lookup("initialize"); !ok || !m.StartsSession {
		t.Fatal("initialize does not start a session")
	}
	if m, ok := Lookup("tools/call"); !ok || m.NameParam != "name" {
		t.Fatal("tools/call's Mcp-Name is not its name")
	}
}
