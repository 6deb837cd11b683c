package testutil

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xeipuuv/gojsonschema"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// RunTool calls tl in-process the way the engine does: args must pass the
// tool's input schema first — a violation is returned as the rejection the
// engine would give, with the schema's messages — then the tool runs, and a
// structured result must match its output schema.
func RunTool(t testing.TB, ctx context.Context, c *callctx.Ctx, tl tool.Tool, args any) (tool.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	spec := tl.Spec()
	res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(spec.InputSchema), gojsonschema.NewBytesLoader(raw))
	if err != nil {
		t.Fatalf("%s: input schema: %v", spec.Name, err)
	}
	if !res.Valid() {
		var msg string
		for i, e := range res.Errors() {
			if i > 0 {
				msg += "; "
			}
			msg += e.String()
		}
		return tool.Result{}, &tool.ValidationError{Field: "(schema)", Reason: msg}
	}
	r, err := tl.Call(ctx, c, raw)
	if err != nil {
		return r, err
	}
	out, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(spec.OutputSchema), gojsonschema.NewBytesLoader(r.Structured))
	if err != nil || !out.Valid() {
		t.Fatalf("%s: result %s does not match the output schema: %v %v", spec.Name, r.Structured, err, out.Errors())
	}
	return r, nil
}
