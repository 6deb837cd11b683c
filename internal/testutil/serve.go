package testutil

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/stdioclient"
)

// Serve starts the real binary (Toolhost) as `toolhost serve args...` with
// the test's environment, initializes an MCP session over its stdio and
// closes it when the test ends.
func Serve(t testing.TB, args ...string) *stdioclient.Client {
	t.Helper()
	return ServeEnv(t, os.Environ(), args...)
}

// ServeEnv is Serve with env as the server's whole environment.
func ServeEnv(t testing.TB, env []string, args ...string) *stdioclient.Client {
	t.Helper()
	c, err := stdioclient.Start(Toolhost(t), append([]string{"serve"}, args...), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(20 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, "2025-06-18", nil); err != nil {
		t.Fatalf("initialize: %v\n%s", err, c.Stderr())
	}
	return c
}

// CallTool runs tools/call within a minute. A call that fails as a call
// (transport or JSON-RPC error) fails the test; a tool's isError result is
// returned for the test to judge.
func CallTool(t testing.TB, c *stdioclient.Client, name string, args any) *stdioclient.ToolResult {
	t.Helper()
	return CallToolMeta(t, c, name, args, nil)
}

// CallToolMeta is CallTool with the request's _meta.
func CallToolMeta(t testing.TB, c *stdioclient.Client, name string, args any, meta map[string]any) *stdioclient.ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.CallTool(ctx, name, args, meta)
	if err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", name, err, c.Stderr())
	}
	return r
}

// DecodeResult decodes the structuredContent of tool name's result r into
// out, failing the test when it does not decode. It does nothing when out
// is nil or r is isError (which carries no structured result).
func DecodeResult(t testing.TB, name string, r *stdioclient.ToolResult, out any) {
	t.Helper()
	if out == nil || r.IsError {
		return
	}
	if err := json.Unmarshal(r.StructuredContent, out); err != nil {
		t.Fatalf("%s: %v in %s", name, err, r.StructuredContent)
	}
}

// ResultOK fails the test unless tool name's result r is a success with
// "ok": true, then decodes it into out (when not nil).
func ResultOK(t testing.TB, name string, r *stdioclient.ToolResult, out any) {
	t.Helper()
	if r.IsError {
		t.Fatalf("%s: isError: %s", name, r.Text())
	}
	var st struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal(r.StructuredContent, &st); err != nil || !st.OK {
		t.Fatalf("%s: %s (%v)", name, r.StructuredContent, err)
	}
	DecodeResult(t, name, r, out)
}

// ListedTool is one tool of a tools/list answer, as far as tests read it.
type ListedTool struct {
	Name         string          `json:"name"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// ListTools runs tools/list and returns the tools by name.
func ListTools(t testing.TB, c *stdioclient.Client) map[string]ListedTool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := c.Call(ctx, "tools/list", map[string]any{})
	if err != nil {
		t.Fatalf("tools/list: %v\nstderr:\n%s", err, c.Stderr())
	}
	var list struct {
		Tools []ListedTool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("tools/list: %v in %s", err, raw)
	}
	out := make(map[string]ListedTool, len(list.Tools))
	for _, tl := range list.Tools {
		out[tl.Name] = tl
	}
	return out
}
