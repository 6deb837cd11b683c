package claudecli

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestTapMCP runs the command TapMCP makes of a stdio server (here a
// server that echoes each line back) and reads both directions back.
func TestTapMCP(t *testing.T) {
	t.Parallel()
	cfg := []byte(`{"mcpServers":{"echo":{"type":"stdio","command":"cat","args":[]},"web":{"type":"http","url":"http://127.0.0.1:1/mcp"}}}`)
	out, tap := TapMCP(t, cfg)
	var doc struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
			URL     string
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.MCPServers["web"].URL != "http://127.0.0.1:1/mcp" || doc.MCPServers["web"].Command != "" {
		t.Errorf("an http server must stay as it is: %+v", doc.MCPServers["web"])
	}
	srv := doc.MCPServers["echo"]
	lines := `{"jsonrpc":"2.0","id":"p1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n"
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Stdin = strings.NewReader(lines)
	got, err := cmd.Output()
	if err != nil || string(got) != lines {
		t.Fatalf("the tapped server changed the stream: %q, %v", got, err)
	}
	if s, r := tap.Sent("echo"), tap.Received("echo"); len(s) != 2 || len(r) != 2 || s[1].Method != "tools/list" {
		t.Fatalf("sent %+v received %+v", s, r)
	}
	if a := tap.Answer("echo", json.RawMessage(`"p1"`)); a != nil {
		t.Errorf("a request echoed back is not an answer: %+v", a)
	}
	if rev := tap.Revision("echo"); rev != "2026-07-28" {
		t.Errorf("Revision = %q, want the per-request 2026-07-28", rev)
	}
}
