package schema_test

import (
	"testing"

	"github.com/toolhost/toolhost/internal/schema"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/all"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// typicalMistakes are arguments a model gets wrong, against the real
// schemas of built-in tools, with the message it must read: each path and
// the rule broken there, in words it can act on. (The README's Benchmarks
// section shows them next to what gojsonschema, the validator before,
// said.)
var typicalMistakes = []struct {
	name, tool, args, want string
}{
	{"missing required", "record_memory", `{"key":"a"}`,
		"content: is required"},
	{"two missing", "bug_transition", `{}`,
		"id: is required; to: is required"},
	{"unknown property", "record_memory", `{"key":"a","content":"x","tag":"t"}`,
		"tag: is not a known property; remove it or check its spelling"},
	{"wrong type", "record_memory", `{"key":"a","content":5}`,
		"content: must be string, not number"},
	{"pattern in an array item", "write_todolist", `{"items":[{"id":"step-001","description":"a"},{"id":"step-2","description":"b"}]}`,
		`items[1].id: does not match pattern ^step-\d{3}$`},
	{"not in the enum", "bug_transition", `{"id":"BUG-0001","to":"done"}`,
		`to: must be one of "open", "triaged", "fixing", "fixed", "verified", "closed", "wontfix"`},
	{"empty string", "bootstrap_prd_site", `{"title":"","chapters":[{"id":"a","title":"t"}]}`,
		"title: must be at least 1 characters long (is 0)"},
	{"empty array", "bootstrap_prd_site", `{"title":"t","chapters":[]}`,
		"chapters: must have at least 1 items (has 0)"},
	{"repeated item", "port_picker", `{"units":["api","api"]}`,
		"units: must not repeat items: [0] and [1] are equal"},
	{"several at once", "write_todolist", `{"items":[{"id":"x"}],"extra":1}`,
		"extra: is not a known property; remove it or check its spelling; items[0].description: is required; items[0].id: does not match pattern ^step-\\d{3}$"},
	{"not an object", "record_memory", `[1]`,
		"(root): must be object, not array"},
}

func TestTypicalMistakes(t *testing.T) {
	t.Parallel()
	specs := map[string]*tool.Spec{}
	for _, tl := range all.Tools() {
		specs[tl.Spec().Name] = tl.Spec()
	}
	for _, c := range typicalMistakes {
		t.Run(c.name, func(t *testing.T) {
			sch, err := schema.Compile(specs[c.tool].InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := wirejson.DecodeAny([]byte(c.args))
			if err != nil {
				t.Fatal(err)
			}
			err = sch.Check(doc)
			ve, ok := err.(*tool.ValidationError)
			if !ok {
				t.Fatalf("Check = %v, want a *tool.ValidationError", err)
			}
			if ve.Reason != c.want {
				t.Errorf("message\n got %s\nwant %s", ve.Reason, c.want)
			}
		})
	}
}
