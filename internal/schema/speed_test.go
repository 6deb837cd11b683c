package schema

import (
	"encoding/json"
	"testing"

	googleschema "github.com/google/jsonschema-go/jsonschema"

	"github.com/toolhost/toolhost/internal/util/wirejson"
)

var speedCases = []struct{ name, schema, doc string }{
	{"parse_placeholder", `{"properties":{"text":{"type":"string","maxLength":1048576},"value":{},"vars":{"type":"object"}},"additionalProperties":false,"type":"object"}`,
		`{"text":"ping {{var:x}}","vars":{"x":1}}`},
	{"write_todolist-20", `{"properties":{"items":{"items":{"properties":{"id":{"type":"string","pattern":"^step-\\d{3}$"},"description":{"type":"string","maxLength":2000,"minLength":1},"depends_on":{"items":{"type":"string"},"type":"array"}},"additionalProperties":false,"type":"object","required":["id","description"]},"type":"array","maxItems":500,"minItems":1}},"additionalProperties":false,"type":"object","required":["items"]}`,
		todo20()},
}

func todo20() string {
	var items []map[string]any
	for i := 1; i <= 20; i++ {
		items = append(items, map[string]any{"id": "step-" + string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10)), "description": "do the thing number whatever", "depends_on": []string{"step-001"}})
	}
	b, _ := json.Marshal(map[string]any{"items": items})
	return string(b)
}

// BenchmarkValidate compares the validators on one valid document each, the
// document decoded once outside the loop where the validator takes a
// decoded value:
//
//	go test -run '^$' -bench Validate -benchmem ./internal/schema
func BenchmarkValidate(b *testing.B) {
	for _, c := range speedCases {
		b.Run(c.name+"/toolhost", func(b *testing.B) {
			s, err := Compile(json.RawMessage(c.schema))
			if err != nil {
				b.Fatal(err)
			}
			doc, _ := wirejson.DecodeAny([]byte(c.doc))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Check(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/google", func(b *testing.B) {
			var s googleschema.Schema
			_ = json.Unmarshal([]byte(c.schema), &s)
			rs, err := s.Resolve(nil)
			if err != nil {
				b.Fatal(err)
			}
			var doc any
			_ = json.Unmarshal([]byte(c.doc), &doc)
			b.ReportAllocs()
			for b.Loop() {
				if err := rs.Validate(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
