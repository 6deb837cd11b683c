package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/rpc"
)

// BenchmarkOpen is the in-process part of cold start: everything serve does
// before it reads the first message.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		s, err := Open(Options{Identity: callctx.Identity{Agent: "integrator", ProjectDir: dir}, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
}

// BenchmarkHandleCall is one tools/call through the method surface and the
// whole pipeline (audit row to the real file) without a transport, as a
// 2025 client sends it and as a 2026-07-28 client does (_meta with the
// revision, identity and capabilities on every request): the difference
// is what the per-request protocol costs.
func BenchmarkHandleCall(b *testing.B) {
	const args = `"name":"parse_placeholder","arguments":{"text":"ping {{var:x}}","vars":{"x":1}}`
	for _, c := range []struct{ name, params string }{
		{"2025", `{` + args + `}`},
		{"2026", `{` + args + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Open(Options{Identity: callctx.Identity{Agent: "integrator", ProjectDir: b.TempDir()}, Log: zerolog.Nop()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			req := rpc.Request{ID: json.RawMessage("1"), Method: "tools/call", Params: json.RawMessage(c.params)}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.Server.Handle(ctx, nopPeer{}, req)
				if err != nil {
					b.Fatal(err)
				}
				if _, e := rpc.EncodeResult(req.ID, res); e != nil {
					b.Fatal(e)
				}
			}
		})
	}
}

type nopPeer struct{}

func (nopPeer) Notify(context.Context, string, any) error    { return nil }
func (nopPeer) Call(context.Context, string, any, any) error { return nil }
func (p nopPeer) Session() rpc.Peer                          { return p }
