package dashboard

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) codes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range regexp.MustCompile(`enter the code ([0-9A-Z-]+) there`).FindAllStringSubmatch(l.b.String(), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestSignInOffLoopback: on an address other than loopback, a visitor gets
// the page's shell and its assets and nothing of the project (no decision
// token, no documents' key, no state) until the browser enters the code
// printed on the terminal; the code works once, five wrong codes replace
// it, and the session is an HttpOnly, SameSite=Strict cookie. (In-process:
// no test listens beyond loopback.)
func TestSignInOffLoopback(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	d, err := New(Options{ProjectDir: t.TempDir(), Codes: &out, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.guard.Bind(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8766})
	d.auth.announce("")
	close(d.ready)
	h := d.Handler()
	req := func(method, target, body string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		r.Host = "dash.lan:8766"
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	page := req("GET", "/", "", nil)
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), `name="toolhost-token" content=""`) ||
		!strings.Contains(page.Body.String(), `name="toolhost-docs" content=""`) || strings.Contains(page.Body.String(), d.dir) {
		t.Fatalf("the page without a session: %d\n%s", page.Code, page.Body)
	}
	for _, p := range []string{"/api/state", "/api/events", "/api/audit", "/api/file?path=x", "/doc/x/prd/index.html"} {
		if w := req("GET", p, "", nil); w.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d", p, w.Code)
		}
	}
	if w := req("GET", "/assets/app.js", "", nil); w.Code != http.StatusOK {
		t.Errorf("the page's script: %d", w.Code)
	}
	first := out.codes()
	if len(first) != 1 {
		t.Fatalf("codes printed: %v", first)
	}
	json := map[string]string{"Content-Type": "application/json"}
	if w := req("POST", "/api/session", `{"code":"`+first[0]+`"}`, map[string]string{"Content-Type": "text/plain"}); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("sign-in as a form: %d", w.Code)
	}
	for i := 0; i < maxMisses; i++ {
		if w := req("POST", "/api/session", `{"code":"00000-00000"}`, json); w.Code != http.StatusForbidden {
			t.Fatalf("wrong code %d: %d", i, w.Code)
		}
	}
	codes := out.codes()
	if len(codes) != 2 || codes[1] == first[0] {
		t.Fatalf("after %d wrong codes the code was not replaced: %v", maxMisses, codes)
	}
	if w := req("POST", "/api/session", `{"code":"`+first[0]+`"}`, json); w.Code != http.StatusForbidden {
		t.Fatalf("the replaced code still works: %d", w.Code)
	}
	// Typed loosely: lower case, no dash.
	w := req("POST", "/api/session", `{"code":"`+strings.ToLower(strings.ReplaceAll(codes[1], "-", ""))+`"}`, json)
	cookie := w.Header().Get("Set-Cookie")
	if w.Code != http.StatusOK || !strings.Contains(cookie, "toolhost_session=") || !strings.Contains(cookie, "HttpOnly") ||
		!strings.Contains(cookie, "SameSite=Strict") || strings.Contains(strings.ToLower(cookie), "expires") || strings.Contains(strings.ToLower(cookie), "max-age") {
		t.Fatalf("sign-in: %d %q %s", w.Code, cookie, w.Body)
	}
	session := strings.SplitN(cookie, ";", 2)[0]
	if w := req("POST", "/api/session", `{"code":"`+codes[1]+`"}`, json); w.Code != http.StatusForbidden {
		t.Fatalf("a used code works again: %d", w.Code)
	}
	if codes = out.codes(); len(codes) != 3 {
		t.Fatalf("no next code printed after a sign-in: %v", codes)
	}
	if w := req("GET", "/api/state", "", map[string]string{"Cookie": session}); w.Code != http.StatusOK {
		t.Fatalf("state with the session: %d", w.Code)
	}
	if w := req("GET", "/", "", map[string]string{"Cookie": session}); w.Code != http.StatusOK || strings.Contains(w.Body.String(), `name="toolhost-token" content=""`) {
		t.Fatalf("the page with the session carries no token: %d", w.Code)
	}
	if w := req("GET", "/api/state", "", map[string]string{"Cookie": session, "Origin": "http://evil.example"}); w.Code != http.StatusForbidden {
		t.Fatalf("the session from another origin: %d", w.Code)
	}
}
