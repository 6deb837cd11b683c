package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/tool"
)

type fakePeer struct {
	mu    sync.Mutex
	notes []string
}

func (p *fakePeer) Notify(_ context.Context, method string, _ any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, method)
	return nil
}

func (p *fakePeer) Call(context.Context, string, any, any) error { return nil }

func (p *fakePeer) Session() rpc.Peer { return p }

func (p *fakePeer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.notes {
		if m == "notifications/tools/list_changed" {
			n++
		}
	}
	return n
}

type fakeTool struct{ spec tool.Spec }

func (f *fakeTool) Spec() *tool.Spec { return &f.spec }
func (f *fakeTool) Call(context.Context, *callctx.Ctx, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

func mk(name, desc string) tool.Tool {
	return &fakeTool{spec: tool.Spec{Name: name, Description: desc, Source: "mcp:u", InputSchema: json.RawMessage(`{"type":"object"}`)}}
}

func TestToolsChangedNotifiesOnlyRealChanges(t *testing.T) {
	t.Parallel()
	reg := registry.New()
	s := &Server{Engine: &engine.Engine{Registry: reg}}
	p := &fakePeer{}
	// Before the client is initialized nothing is sent.
	reg.SetSource("mcp:u", 0, []tool.Tool{mk("u__a", "first")})
	s.ToolsChanged()
	if p.count() != 0 {
		t.Fatal("notified a peer that is not known yet")
	}
	s.Notification(context.Background(), p, "notifications/initialized", nil)
	if _, err := s.listTools(context.Background(), reqInfo{}, nil); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func()
		want   int
	}{
		{"no change", func() {}, 0},
		{"same set again", func() { reg.SetSource("mcp:u", 0, []tool.Tool{mk("u__a", "first")}) }, 0},
		{"a tool added", func() { reg.SetSource("mcp:u", 0, []tool.Tool{mk("u__a", "first"), mk("u__b", "")}) }, 1},
		{"a description changed", func() { reg.SetSource("mcp:u", 0, []tool.Tool{mk("u__a", "second"), mk("u__b", "")}) }, 1},
		{"source removed", func() { reg.SetSource("mcp:u", 0, nil) }, 1},
	}
	for _, st := range steps {
		before := p.count()
		st.change()
		s.ToolsChanged()
		if got := p.count() - before; got != st.want {
			t.Fatalf("%s: %d notification(s), want %d", st.name, got, st.want)
		}
	}
	res, err := s.listTools(context.Background(), reqInfo{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if string(b) != `{"tools":[]}` {
		t.Fatalf("tools/list after removal = %s", b)
	}
}

// TestCallParamErrors: tools/call params of the wrong JSON types are -32602
// and the message names the field and the type wanted, not Go types.
func TestCallParamErrors(t *testing.T) {
	t.Parallel()
	s := &Server{Engine: &engine.Engine{Registry: registry.New()}}
	cases := map[string]string{
		`{"name":5}`:               `"name" is a number, want a string`,
		`"str"`:                    `params is a string, want an object`,
		`[1]`:                      `params is an array, want an object`,
		`{"name":"x","_meta":"s"}`: `"_meta" is a string, want an object`,
		`{"name":"x","_meta":[1]}`: `"_meta" is an array, want an object`,
	}
	for params, want := range cases {
		_, err := s.Handle(context.Background(), &fakePeer{}, rpc.Request{ID: json.RawMessage("1"), Method: "tools/call", Params: json.RawMessage(params)})
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeInvalidParams {
			t.Errorf("%s: want -32602, got %v", params, err)
			continue
		}
		if !strings.Contains(re.Message, want) || strings.Contains(re.Message, "Go ") {
			t.Errorf("%s: message %q, want it to say %q", params, re.Message, want)
		}
	}
}

// TestFormElicitation: which declared elicitation capabilities let the
// server ask through a form.
func TestFormElicitation(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		``: false, `null`: false, `true`: false, `{}`: true,
		`{"form":{}}`: true, `{"form":{},"url":{}}`: true, `{"url":{}}`: false,
	}
	for caps, want := range cases {
		if got := formElicitation(json.RawMessage(caps)); got != want {
			t.Errorf("elicitation %q: form %t, want %t", caps, got, want)
		}
	}
}
