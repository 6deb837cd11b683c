package server

import (
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// BenchmarkProtocolPart is what the method surface itself does per
// tools/call — decode the params and _meta, decide the revision, check the
// call's own fields, encode the result — for a 2025 request and for a
// 2026-07-28 one with its per-request _meta: the whole extra cost of the
// 2026-07-28 path, without the pipeline.
func BenchmarkProtocolPart(b *testing.B) {
	const args = `"name":"parse_placeholder","arguments":{"text":"ping {{var:x}}","vars":{"x":1}}`
	s := &Server{Name: "toolhost", Version: "1.0.0"}
	s.init()
	structured := json.RawMessage(`{"ok":true,"text":"ping 1","unresolved":[]}`)
	for _, c := range []struct {
		name, params string
	}{
		{"2025", `{` + args + `}`},
		{"2026", `{` + args + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			params := json.RawMessage(c.params)
			b.ReportAllocs()
			for b.Loop() {
				var p callParams
				if err := wirejson.Unmarshal(params, &p); err != nil {
					b.Fatal(err)
				}
				ri, err := era(&p.Meta)
				if err != nil {
					b.Fatal(err)
				}
				if err := checkCallMeta(&p.Meta); err != nil {
					b.Fatal(err)
				}
				_ = capsElicitForm(ri.caps)
				_ = s.successResult(structured, ri.perRequest)
			}
		})
	}
}
