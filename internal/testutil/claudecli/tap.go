package claudecli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// MCPTap records the JSON-RPC lines between the CLI and its stdio MCP
// servers (TapMCP).
type MCPTap struct{ dir string }

// RPC is one JSON-RPC message on a tapped server's stdio.
type RPC struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	Raw    json.RawMessage `json:"-"`
}

// TapMCP returns mcpConfig (an --mcp-config document) with every stdio
// server started through `sh -c 'tee … | server | tee …'`, so the test can
// read what the CLI sent each server and what it answered. Environment,
// arguments and stderr of the servers are unchanged.
func TapMCP(t testing.TB, mcpConfig []byte) ([]byte, *MCPTap) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(mcpConfig, &doc); err != nil {
		t.Fatalf("claudecli: mcp config: %v", err)
	}
	servers, _ := doc["mcpServers"].(map[string]any)
	tap := &MCPTap{dir: t.TempDir()}
	for name, s := range servers {
		srv, _ := s.(map[string]any)
		if typ, _ := srv["type"].(string); typ != "" && typ != "stdio" {
			continue
		}
		command, _ := srv["command"].(string)
		args, _ := srv["args"].([]any)
		srv["command"] = "/bin/sh"
		srv["args"] = append([]any{"-c", `in=$1 out=$2; shift 2; tee -a "$in" | "$@" | tee -a "$out"`, "sh",
			tap.file(name, "sent"), tap.file(name, "received"), command}, args...)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out, tap
}

func (tp *MCPTap) file(server, dir string) string {
	return filepath.Join(tp.dir, server+"."+dir+".ndjson")
}

// Sent returns the messages the CLI sent to server, in order.
func (tp *MCPTap) Sent(server string) []RPC { return tp.read(tp.file(server, "sent")) }

// Received returns the messages server sent to the CLI, in order.
func (tp *MCPTap) Received(server string) []RPC { return tp.read(tp.file(server, "received")) }

// Answer returns the response server sent to the request with id, or nil.
func (tp *MCPTap) Answer(server string, id json.RawMessage) *RPC {
	for _, r := range tp.Received(server) {
		if r.Method == "" && string(r.ID) == string(id) {
			return &r
		}
	}
	return nil
}

func (tp *MCPTap) read(path string) []RPC {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []RPC
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r RPC
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			r.Raw = append(json.RawMessage(nil), sc.Bytes()...)
			out = append(out, r)
		}
	}
	return out
}

// Revision returns the MCP protocol revision the CLI settled on with
// server: the protocolVersion of its initialize (a 2025 or older, session
// era), else the per-request version in the _meta of the last request it
// sent (2026-07-28 and later); "" when it sent neither.
func (tp *MCPTap) Revision(server string) string {
	sent := tp.Sent(server)
	for _, r := range sent {
		if r.Method == "initialize" {
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(r.Params, &p)
			return p.ProtocolVersion
		}
	}
	for i := len(sent) - 1; i >= 0; i-- {
		var p struct {
			Meta map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(sent[i].Params, &p)
		if v, ok := p.Meta["io.modelcontextprotocol/protocolVersion"].(string); ok && sent[i].ID != nil {
			return v
		}
	}
	return ""
}
