package webguard

import (
	"net"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

func TestGuard(t *testing.T) {
	t.Parallel()
	loop := New([]string{"http://localhost:3000/"})
	loop.Bind(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8765})
	wide := New(nil)
	wide.Bind(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8765})
	for _, c := range []struct {
		name         string
		g            *Guard
		host, origin string
		hostOK, orOK bool
	}{
		{"own loopback origin", loop, "127.0.0.1:8765", "http://127.0.0.1:8765", true, true},
		{"localhost spelling", loop, "localhost:8765", "http://LOCALHOST:8765/", true, true},
		{"no origin (not a browser page)", loop, "[::1]:8765", "", true, true},
		{"allowed origin", loop, "127.0.0.1:8765", "http://localhost:3000", true, true},
		{"rebound DNS name", loop, "evil.example:8765", "http://evil.example:8765", false, false},
		{"other port", loop, "127.0.0.1:8765", "http://127.0.0.1:9999", true, false},
		{"https spelling", loop, "127.0.0.1:8765", "https://127.0.0.1:8765", true, false},
		{"null origin (sandboxed page)", loop, "127.0.0.1:8765", "null", true, false},
		{"non-loopback server: any Host", wide, "dash.lan:8765", "", true, true},
		{"non-loopback server: foreign origin", wide, "dash.lan:8765", "http://evil.example", true, false},
	} {
		if got := c.g.HostAllowed(c.host); got != c.hostOK {
			t.Errorf("%s: HostAllowed(%q) = %v", c.name, c.host, got)
		}
		if got := c.g.OriginAllowed(c.origin); got != c.orOK {
			t.Errorf("%s: OriginAllowed(%q) = %v", c.name, c.origin, got)
		}
	}
	if !BearerOK("Bearer s3cret", "s3cret") || BearerOK("Bearer s3cre", "s3cret") || BearerOK("", "s3cret") {
		t.Error("BearerOK")
	}
}

// TestHTTPServersLinkNoMCPClient: the guard of toolhost's HTTP servers, and
// so the MCP transport and the dashboard, link no MCP client SDK (the
// upstream package's go-sdk).
func TestHTTPServersLinkNoMCPClient(t *testing.T) {
	t.Parallel()
	mod := "github.com/toolhost/toolhost/internal/"
	testutil.NoDeps(t, []string{mod + "webguard", mod + "httpserve"}, "github.com/modelcontextprotocol/go-sdk", mod+"upstream")
}
