package testutil

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/schema"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/wirejson"
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
	if err := check(spec.InputSchema, raw); err != nil {
		var ve *tool.ValidationError
		if errors.As(err, &ve) {
			return tool.Result{}, err
		}
		t.Fatalf("%s: input schema: %v", spec.Name, err)
	}
	r, err := tl.Call(ctx, c, raw)
	if err != nil {
		return r, err
	}
	if err := check(spec.OutputSchema, r.Structured); err != nil {
		t.Fatalf("%s: result %s does not match the output schema: %v", spec.Name, r.Structured, err)
	}
	return r, nil
}

// check validates raw against a schema with the engine's validator; a
// *tool.ValidationError names what was broken, any other error is the
// schema's or the document's.
func check(sch json.RawMessage, raw []byte) error {
	s, err := schema.Compile(sch)
	if err != nil {
		return err
	}
	doc, err := wirejson.DecodeAny(raw)
	if err != nil {
		return err
	}
	return s.Check(doc)
}
