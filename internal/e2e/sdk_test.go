package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestOfficialGoSDKClient connects the official MCP Go SDK client to the
// release binary over stdio, lists every page of tools and calls one.
func TestOfficialGoSDKClient(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "interop-test", Version: "1"}, nil)
	cmd := exec.Command(bin, "serve", "--agent", "tester", "--project-dir", project, "--page-size", "2")
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer session.Close()
	if v := session.InitializeResult().ProtocolVersion; v == "" {
		t.Fatalf("no protocol version negotiated")
	}
	var names []string
	for tl, err := range session.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		names = append(names, tl.Name)
		if tl.InputSchema == nil || tl.OutputSchema == nil {
			t.Errorf("%s: missing input or output schema", tl.Name)
		}
	}
	if !contains(names, "timeline_append") || contains(names, "write_chapter") {
		t.Errorf("tester's tools over all pages = %v; want timeline_append and no write_chapter", names)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{
		Name:      "timeline_append",
		Arguments: map[string]any{"kind": "test.interop", "message": "hello from the go-sdk"},
	})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if res.IsError {
		t.Fatalf("call returned isError: %+v", res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"seq":1`) {
		t.Errorf("structuredContent = %s, want seq 1", b)
	}
	bad, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "timeline_append", Arguments: map[string]any{"kind": 5}})
	if err != nil {
		t.Fatalf("call with bad args: %v", err)
	}
	if !bad.IsError {
		t.Fatalf("bad arguments must give isError")
	}
	text := bad.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "kind: invalid type") || !strings.Contains(text, "message") {
		t.Errorf("validation message should name the fields and rules: %q", text)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestMCPInspectorOverStdio drives the release binary with a second,
// independent client: the MCP Inspector CLI (TypeScript SDK), which spawns
// toolhost over stdio like Claude CLI does.
func TestMCPInspectorOverStdio(t *testing.T) {
	t.Parallel()
	inspector := testutil.NeedTool(t, "mcp-inspector", "TOOLHOST_INSPECTOR", "bash scripts/deps/30-inspector.sh")
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	inspect := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		all := append([]string{"--cli", bin, "serve", "--agent", "tester", "--project-dir", project}, args...)
		out, err := exec.CommandContext(ctx, inspector, all...).CombinedOutput()
		if err != nil {
			t.Fatalf("mcp-inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	list := inspect("--method", "tools/list")
	if !strings.Contains(list, `"name": "bug_open"`) || strings.Contains(list, `"name": "write_chapter"`) {
		t.Errorf("tools/list through the Inspector: want the tester's tools only:\n%.2000s", list)
	}
	call := inspect("--method", "tools/call", "--tool-name", "timeline_append", "--tool-arg", "kind=test.inspector", "--tool-arg", "message=hello")
	if !strings.Contains(call, `"seq": 1`) || !strings.Contains(call, `"isError": false`) {
		t.Errorf("tools/call through the Inspector:\n%s", call)
	}
}
