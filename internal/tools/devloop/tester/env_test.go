package tester

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

// newCtx wires a call context on a fresh project dir with the real sandbox
// doors and journal, as a session does.
func newCtx(t *testing.T, agent, unit string) *callctx.Ctx {
	t.Helper()
	return testutil.NewCtx(t, testutil.CtxOptions{Agent: agent, Unit: unit})
}

// call runs a tool the way the engine does after validation and returns the
// decoded result, or the error of a rejection or system failure.
func call[Out any](t *testing.T, c *callctx.Ctx, tl tool.Tool, args any) (Out, tool.Result, error) {
	t.Helper()
	var out Out
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Call(context.Background(), c, raw)
	if err != nil {
		return out, res, err
	}
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		t.Fatalf("decode %s result %s: %v", tl.Spec().Name, res.Structured, err)
	}
	return out, res, nil
}

// writeProjectFile puts a file into the project dir (test setup, not a tool
// write).
func writeProjectFile(t *testing.T, c *callctx.Ctx, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(c.ProjectDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ndjson reads the lines of a project NDJSON file.
func ndjson(t *testing.T, c *callctx.Ctx, rel string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.ProjectDir, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: bad line %q: %v", rel, l, err)
		}
		out = append(out, m)
	}
	return out
}
