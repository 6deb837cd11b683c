package upstream

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

	"github.com/toolhost/toolhost/internal/testutil"
)

var (
	fakeOnce sync.Once
	fakePath string
	fakeErr  error
	fakeOut  []byte
)

// fakeMCP builds testdata/fakemcp (a stdio MCP server) once per test process.
func fakeMCP(t testing.TB) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fakemcp-")
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

// httpFake is an MCP server over Streamable HTTP on loopback, in process.
type httpFake struct {
	URL string
	// Unavailable makes every tools/call answer 503.
	Unavailable atomic.Bool
	// Calls counts tools/call requests that reached the server.
	Calls atomic.Int32
	srv   *http.Server
}

// freeAddr returns a loopback address nothing listens on (yet).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startHTTPFake serves the fake on addr until the test ends.
func startHTTPFake(t testing.TB, addr string) *httpFake {
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
	f := &httpFake{URL: "http://" + addr + "/mcp"}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				f.Calls.Add(1)
				if f.Unavailable.Load() {
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
	f.srv = &http.Server{Handler: mux}
	go func() { _ = f.srv.Serve(ln) }()
	t.Cleanup(func() { _ = f.srv.Close() })
	return f
}
