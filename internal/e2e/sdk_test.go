package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
)

// confirmPolicyFile writes the embedded tool policy with confirm: true on
// timeline_append.
func confirmPolicyFile(t *testing.T) string {
	return policyFile(t, `{"tools":{"timeline_append":{"confirm":true}}}`)
}

// TestOfficialGoSDKClient connects the official MCP Go SDK client (v1.8.0)
// to the release binary in both eras — 2026-07-28 (server/discover, then
// stateless requests) and 2025-11-25 (initialize) — over stdio
// (CommandTransport) and Streamable HTTP, lists every page of tools and
// calls: a plain call, a validation failure, and a tool that needs
// confirmation, answered accept, decline and cancel by the SDK's own
// elicitation handler (a multi-round-trip request in 2026, elicitation/create
// in 2025).
func TestOfficialGoSDKClient(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	for _, tc := range []struct{ transport, version string }{
		{"stdio", "2026-07-28"}, {"stdio", "2025-11-25"}, {"http", "2026-07-28"}, {"http", "2025-11-25"},
	} {
		t.Run(tc.transport+"/"+tc.version, func(t *testing.T) {
			t.Parallel()
			project := t.TempDir()
			args := []string{"--agent", "tester", "--project-dir", project, "--page-size", "2", "--policy", confirmPolicyFile(t)}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var mu sync.Mutex
			answers := []string{"accept", "decline", "cancel"}
			client := mcp.NewClient(&mcp.Implementation{Name: "interop-test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					if !strings.Contains(req.Params.Message, "timeline_append") {
						return nil, fmt.Errorf("unexpected question %q", req.Params.Message)
					}
					a := answers[0]
					answers = answers[1:]
					return &mcp.ElicitResult{Action: a}, nil
				},
			})
			var tr mcp.Transport
			if tc.transport == "http" {
				srv := testutil.ServeHTTP(t, bin, args...)
				tr = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: srv.Client()}
			} else {
				tr = &mcp.CommandTransport{Command: exec.Command(bin, append([]string{"serve"}, args...)...)}
			}
			session, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer session.Close()
			if v := session.InitializeResult().ProtocolVersion; v != tc.version {
				t.Fatalf("the SDK settled on %q, want %q", v, tc.version)
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
			if !contains(names, "bug_list") || !contains(names, "timeline_append") || contains(names, "write_chapter") {
				t.Errorf("tester's tools over all pages = %v; want bug_list, timeline_append and no write_chapter", names)
			}
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "bug_list", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("bug_list: %v %+v", err, res)
			}
			bad, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "timeline_append", Arguments: map[string]any{"kind": 5}})
			if err != nil {
				t.Fatalf("call with bad args: %v", err)
			}
			if text := bad.Content[0].(*mcp.TextContent).Text; !bad.IsError || !strings.Contains(text, "kind: must be string") || !strings.Contains(text, "message") {
				t.Errorf("validation message should name the fields and rules: %v %q", bad.IsError, text)
			}
			for _, want := range []struct {
				answer  string
				isError bool
				text    string
			}{
				{"accept", false, `"seq":1`},
				{"decline", true, "declined by user"},
				{"cancel", true, "toolhost approve cf-"},
			} {
				res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "timeline_append",
					Arguments: map[string]any{"kind": "test.interop", "message": "answered " + want.answer}})
				if err != nil {
					t.Fatalf("%s: %v", want.answer, err)
				}
				if text := res.Content[0].(*mcp.TextContent).Text; res.IsError != want.isError || !strings.Contains(text, want.text) {
					t.Errorf("answered %s: isError %v %q; want isError %v with %q", want.answer, res.IsError, text, want.isError, want.text)
				}
			}
			if len(answers) != 0 {
				t.Errorf("the human was not asked for every call: %v left", answers)
			}
			tl, _ := os.ReadFile(filepath.Join(project, "timeline.ndjson"))
			if !strings.Contains(string(tl), "answered accept") || strings.Contains(string(tl), "answered decline") || strings.Contains(string(tl), "answered cancel") {
				t.Errorf("timeline: %s", tl)
			}
		})
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
