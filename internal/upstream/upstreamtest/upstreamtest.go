package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/testutil"
)

var (
	fakeOnce sync.Once
	fakePath string
	fakeErr  error
	fakeOut  []byte
)

// FakeMCP builds testdata/fakemcp (a stdio MCP server made with the go-sdk)
// once per test process and returns its path.
func FakeMCP(t testing.TB) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := testutil.ProcessDir("fakemcp")
		if err != nil {
			fakeErr = err
			return
		}
		fakePath = filepath.Join(dir, "fakemcp")
		cmd := exec.Command("go", "build", "-o", fakePath, "./internal/upstream/testdata/fakemcp")
		cmd.Dir = testutil.RepoRoot(t)
		fakeOut, fakeErr = cmd.CombinedOutput()
	})
	if fakeErr != nil {
		t.Fatalf("build fakemcp: %v\n%s", fakeErr, fakeOut)
	}
	return fakePath
}

// HTTPFake is an MCP server over Streamable HTTP on loopback, in process,
// with a read tool (lookup) and a write tool (update).
type HTTPFake struct {
	URL string
	// Unavailable makes every tools/call answer 503.
	Unavailable atomic.Bool
	// FailNext makes the next n tools/call requests answer 503.
	FailNext atomic.Int32
	// Calls counts tools/call requests that reached the server.
	Calls atomic.Int32
	// Header is the X-Fake-Token header of the last request.
	Header atomic.Value
	// Traceparent is the traceparent header of the last tools/call.
	Traceparent atomic.Value
}

// FreeAddr returns a loopback address nothing listens on (yet).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// StartHTTPFake serves the fake on addr until the test ends; with port 0
// ("127.0.0.1:0") the system picks a free port, which f.URL names. A test
// that restarts a fake on a known address passes that address.
func StartHTTPFake(t testing.TB, addr string) *HTTPFake {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "webfake", Version: "1"}, nil)
	type kv struct {
		Key   string `json:"key" jsonschema:"the key"`
		Value string `json:"value,omitempty" jsonschema:"the value to store"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look a key up."},
		func(_ context.Context, _ *mcp.CallToolRequest, in kv) (*mcp.CallToolResult, kv, error) {
			return nil, kv{Key: in.Key, Value: "value-of-" + in.Key}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "update", Description: "Store a key."},
		func(_ context.Context, _ *mcp.CallToolRequest, in kv) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "updated " + in.Key}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	f := &HTTPFake{}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		f.Header.Store(r.Header.Get("X-Fake-Token"))
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				f.Calls.Add(1)
				f.Traceparent.Store(r.Header.Get("traceparent"))
				if f.Unavailable.Load() || f.FailNext.Add(-1) >= 0 {
					http.Error(w, "maintenance", http.StatusServiceUnavailable)
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f.URL = "http://" + ln.Addr().String() + "/mcp"
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return f
}

// WriteConfigs writes into dir an agents file where pm may use every
// fake__* and web__* tool, and a policy file (the embedded one plus rules)
// naming the given upstreams.
func WriteConfigs(t testing.TB, dir string, rules map[string]policy.Rule, ups ...policy.Upstream) (agentsFile, policyFile string) {
	t.Helper()
	return WriteConfigsFor(t, dir, "pm", rules, ups...)
}

// WriteConfigsFor is WriteConfigs for the agent whose short name is agent.
func WriteConfigsFor(t testing.TB, dir, agent string, rules map[string]policy.Rule, ups ...policy.Upstream) (agentsFile, policyFile string) {
	t.Helper()
	var set map[string]any
	if err := json.Unmarshal(configs.AgentsJSON, &set); err != nil {
		t.Fatal(err)
	}
	for _, a := range set["agents"].([]any) {
		ag := a.(map[string]any)
		if ag["short"] == agent {
			cli := ag["cli"].(map[string]any)
			cli["toolPolicy"] = append(cli["toolPolicy"].([]any), "fake__*", "web__*")
		}
	}
	agentsFile = filepath.Join(dir, "agents.json")
	writeJSON(t, agentsFile, set)
	policyFile = filepath.Join(dir, "tools.json")
	WritePolicy(t, policyFile, rules, ups...)
	return agentsFile, policyFile
}

// WritePolicy writes the embedded policy plus rules and upstreams to path.
func WritePolicy(t testing.TB, path string, rules map[string]policy.Rule, ups ...policy.Upstream) {
	t.Helper()
	f, err := policy.Parse(configs.ToolsJSON)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range rules {
		f.Tools[k] = v
	}
	f.Upstream = ups
	writeJSON(t, path, f)
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
