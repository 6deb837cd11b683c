package httpserve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// meta20260728 is the _meta a request of revision 2026-07-28 carries (no
// session: every request names its revision and capabilities).
const meta20260728 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// post sends one JSON-RPC message and returns the status, headers and body.
func post(t *testing.T, url, body string, headers map[string]string) (int, http.Header, string) {
	t.Helper()
	return postAs(t, url, "application/json", body, headers)
}

// postAs is post with the Content-Type contentType ("" sends none).
func postAs(t *testing.T, url, contentType, body string, headers map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func perRequestHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func timelineLines(t *testing.T, project string) int {
	b, _ := os.ReadFile(filepath.Join(project, "timeline.ndjson"))
	return strings.Count(string(b), "\n")
}

// TestOrigin: a browser page on a foreign origin (the DNS rebinding attack)
// gets 403 and runs nothing; the server's own loopback origin, requests
// without Origin and an origin allowed by --allow-origin are served.
func TestOrigin(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	s := serveHTTP(t, project, "--allow-origin", "http://localhost:3000")
	u, _ := url.Parse(s.URL)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"k","message":"m"},` + meta20260728 + `}}`
	for _, c := range []struct {
		origin string
		want   int
	}{
		{"http://evil.example", http.StatusForbidden},
		{"http://evil.example:" + u.Port(), http.StatusForbidden},
		{"https://127.0.0.1:" + u.Port(), http.StatusForbidden},
		{"http://127.0.0.1:1", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"http://localhost:3001", http.StatusForbidden},
		{"", http.StatusOK},
		{"http://127.0.0.1:" + u.Port(), http.StatusOK},
		{"http://localhost:" + u.Port(), http.StatusOK},
		{"http://LOCALHOST:3000/", http.StatusOK},
	} {
		before := timelineLines(t, project)
		h := perRequestHeaders("tools/call", "timeline_append")
		if c.origin != "" {
			h["Origin"] = c.origin
		}
		status, _, body := post(t, s.URL, call, h)
		if status != c.want {
			t.Errorf("Origin %q: status %d (%s), want %d", c.origin, status, body, c.want)
		}
		ran := timelineLines(t, project) > before
		if ran != (c.want == http.StatusOK) {
			t.Errorf("Origin %q: the call ran: %v", c.origin, ran)
		}
		if c.want == http.StatusForbidden && !strings.Contains(body, "--allow-origin") {
			t.Errorf("Origin %q: the refusal must say how to allow it: %s", c.origin, body)
		}
	}
	// A rebound DNS name reaches the loopback server with its own Host.
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(call))
	req.Host = "evil.example:" + u.Port()
	for k, v := range perRequestHeaders("tools/call", "timeline_append") {
		req.Header.Set(k, v)
	}
	before := timelineLines(t, project)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || timelineLines(t, project) != before {
		t.Errorf("Host evil.example on a loopback server: status %d", resp.StatusCode)
	}
}

// TestSlowBody: a client that sends headers and then trickles (or stalls)
// its body is cut off after --http-body-timeout with 408; a call running
// longer than that timeout is not, and the server keeps serving.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	s := serveHTTP(t, t.TempDir(), "--http-body-timeout", "500ms")
	u, _ := url.Parse(s.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, s.srv.Token, len(body), body[:5])
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	reply, _ := io.ReadAll(conn)
	if !bytes.HasPrefix(reply, []byte("HTTP/1.1 408")) || !bytes.Contains(reply, []byte("did not arrive within 500ms")) {
		t.Fatalf("a stalled body must get 408 naming the limit; got %q after %s", reply, time.Since(start))
	}
	// A call slower than the body timeout is not cut off.
	status, _, out := post(t, s.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"update_todo_item","arguments":{"id":"step-001","status":"done"},`+meta20260728+`}}`,
		perRequestHeaders("tools/call", "update_todo_item"))
	if status != http.StatusOK || !strings.Contains(out, `"ok\":false`) {
		t.Fatalf("after the slow client: %d %s", status, out)
	}
}

// TestModernHeaders: a 2026-07-28 POST must mirror its method, tool name
// and revision in headers; a mismatch or an omission is 400 with
// HeaderMismatch (-32020) and runs nothing.
func TestModernHeaders(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	s := serveHTTP(t, project)
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"k","message":"m"},` + meta20260728 + `}}`
	for _, c := range []struct {
		name    string
		headers map[string]string
		code    int
	}{
		{"no headers", map[string]string{}, -32020},
		{"wrong tool name", perRequestHeaders("tools/call", "record_memory"), -32020},
		{"wrong method", perRequestHeaders("tools/list", "timeline_append"), -32020},
		{"no Mcp-Name", perRequestHeaders("tools/call", ""), -32020},
		{"wrong revision header", map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "timeline_append"}, -32020},
		{"bad base64 name", perRequestHeaders("tools/call", "=?base64?!!!?="), -32020},
		{"base64 name", perRequestHeaders("tools/call", "=?base64?dGltZWxpbmVfYXBwZW5k?="), 0},
		{"right headers", perRequestHeaders("tools/call", "timeline_append"), 0},
	} {
		before := timelineLines(t, project)
		status, _, body := post(t, s.URL, call, c.headers)
		var m struct {
			ID    int                 `json:"id"`
			Error *struct{ Code int } `json:"error"`
		}
		_ = json.Unmarshal([]byte(body), &m)
		ran := timelineLines(t, project) > before
		switch {
		case c.code == 0 && (status != http.StatusOK || m.Error != nil || !ran):
			t.Errorf("%s: %d %s, ran %v; want it served", c.name, status, body, ran)
		case c.code != 0 && (status != http.StatusBadRequest || m.Error == nil || m.Error.Code != c.code || m.ID != 7 || ran):
			t.Errorf("%s: %d %s, ran %v; want 400 with %d for id 7, nothing run", c.name, status, body, ran, c.code)
		}
	}
	// The 2026-07-28 errors the binding gives a status of its own.
	for _, c := range []struct {
		body, method string
		status       int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, "tools/list", http.StatusBadRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "tools/list", http.StatusBadRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{` + meta20260728 + `}}`, "nope/nope", http.StatusNotFound},
	} {
		h := perRequestHeaders(c.method, "")
		if strings.Contains(c.body, "1999") {
			h["MCP-Protocol-Version"] = "1999-01-01"
		}
		if status, _, body := post(t, s.URL, c.body, h); status != c.status {
			t.Errorf("%s: status %d (%s), want %d", c.body, status, body, c.status)
		}
	}
}

// TestLegacySession: a 2025 client's session — initialize mints an
// Mcp-Session-Id, requests in it are served, a GET opens its stream,
// DELETE ends it, and a request naming an ended (or unknown) session is
// 404. 2026-07-28 requests ignore the header and mint none; GET and DELETE
// without a session are 405.
func TestLegacySession(t *testing.T) {
	t.Parallel()
	s := serveHTTP(t, t.TempDir())
	status, h, body := post(t, s.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, nil)
	sid := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %d %q %s", status, sid, body)
	}
	inSession := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	if status, _, _ := post(t, s.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, inSession); status != http.StatusAccepted {
		t.Errorf("notifications/initialized: %d, want 202", status)
	}
	if status, _, body := post(t, s.URL, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, inSession); status != http.StatusOK || !strings.Contains(body, `"result":{}`) {
		t.Errorf("ping in the session: %d %s", status, body)
	}
	if status, _, _ := post(t, s.URL, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"MCP-Protocol-Version": "1999-01-01"}); status != http.StatusBadRequest {
		t.Errorf("an unsupported MCP-Protocol-Version: %d, want 400", status)
	}
	get, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	resp, err := client.Do(get)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET stream: %v %+v", err, resp)
	}
	del, _ := http.NewRequest(http.MethodDelete, s.URL, nil)
	del.Header.Set("Mcp-Session-Id", sid)
	if r, err := client.Do(del); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %+v", err, r)
	}
	// Ending the session ends its stream.
	done := make(chan struct{})
	go func() { _, _ = io.ReadAll(resp.Body); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the GET stream outlived its session")
	}
	resp.Body.Close()
	if status, _, _ := post(t, s.URL, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, inSession); status != http.StatusNotFound {
		t.Errorf("a request in the ended session: %d, want 404", status)
	}
	status, h, _ = post(t, s.URL, `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{`+meta20260728+`}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Mcp-Session-Id": "whatever"})
	if status != http.StatusOK || h.Get("Mcp-Session-Id") != "" {
		t.Errorf("a 2026-07-28 request with a stale session header: %d, session %q", status, h.Get("Mcp-Session-Id"))
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, s.URL, nil)
		if r, err := client.Do(req); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s without a session: %v %+v", m, err, r)
		}
	}
}

// TestBodyCap: a body of exactly --max-message-bytes is served, one byte
// more is 413 with the id read from its start.
func TestBodyCap(t *testing.T) {
	t.Parallel()
	const limit = 4096
	s := serveHTTP(t, t.TempDir(), "--max-message-bytes", fmt.Sprint(limit))
	msg := func(n int) string {
		m := `{"jsonrpc":"2.0","id":"cap","method":"tools/list","params":{` + meta20260728 + `,"pad":"`
		return m + strings.Repeat("x", n-len(m)-3) + `"}}`
	}
	if status, _, body := post(t, s.URL, msg(limit), perRequestHeaders("tools/list", "")); status != http.StatusOK || !strings.Contains(body, `"result":{`) {
		t.Errorf("exactly the cap: %d %s", status, body)
	}
	status, _, body := post(t, s.URL, msg(limit+1), perRequestHeaders("tools/list", ""))
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"id":"cap"`) || !strings.Contains(body, "4096-byte limit") {
		t.Errorf("one byte over the cap: %d %s", status, body)
	}
}

// TestOnlyJSONBodiesAndSessions: a POST whose body is not declared JSON —
// text/plain and the form encodings a page of another site may send
// without asking first, or none at all — is 415 and runs nothing; a 2025
// request that names no session (other than initialize) is 400 and runs
// nothing, while the same call as a 2026-07-28 request, which needs no
// session, runs.
func TestOnlyJSONBodiesAndSessions(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	s := serveHTTP(t, project)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"k","message":"m"},` + meta20260728 + `}}`
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonx", "application/json-patch+json"} {
		before := timelineLines(t, project)
		status, _, body := postAs(t, s.URL, ct, call, perRequestHeaders("tools/call", "timeline_append"))
		if status != http.StatusUnsupportedMediaType || !strings.Contains(body, "application/json") {
			t.Errorf("Content-Type %q: %d %s, want 415 naming application/json", ct, status, body)
		}
		if timelineLines(t, project) != before {
			t.Errorf("Content-Type %q: the call ran", ct)
		}
	}
	if status, _, body := postAs(t, s.URL, "application/json; charset=utf-8", call, perRequestHeaders("tools/call", "timeline_append")); status != http.StatusOK || timelineLines(t, project) != 1 {
		t.Fatalf("application/json with a charset: %d %s", status, body)
	}

	call2025 := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"k","message":"2025"}}}`
	for name, h := range map[string]map[string]string{
		"no header":      nil,
		"2025-06-18":     {"MCP-Protocol-Version": "2025-06-18"},
		"2025-11-25":     {"MCP-Protocol-Version": "2025-11-25"},
		"a notification": nil,
		"tools/list":     {"MCP-Protocol-Version": "2025-03-26"},
	} {
		body := call2025
		switch name {
		case "a notification":
			body = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		case "tools/list":
			body = `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
		}
		before := timelineLines(t, project)
		status, _, out := post(t, s.URL, body, h)
		if status != http.StatusBadRequest || !strings.Contains(out, "Mcp-Session-Id") {
			t.Errorf("a 2025 request without a session (%s): %d %s, want 400 naming Mcp-Session-Id", name, status, out)
		}
		if timelineLines(t, project) != before {
			t.Errorf("a 2025 request without a session (%s) ran", name)
		}
	}
	status, h, _ := post(t, s.URL, `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, nil)
	if status != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize without a session: %d, session %q", status, h.Get("Mcp-Session-Id"))
	}
	if status, _, out := post(t, s.URL, call2025, map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}); status != http.StatusOK || timelineLines(t, project) != 2 {
		t.Errorf("the same call in the session: %d %s", status, out)
	}
}
