package dashboard

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestTokenOnNonLoopbackAddress: on an address other than loopback every
// request needs the token — as a bearer header, or as the cookie that
// opening the printed URL sets — and the page's own origin is whatever
// name it is reached by. (In-process: no test listens beyond loopback.)
func TestTokenOnNonLoopbackAddress(t *testing.T) {
	t.Parallel()
	d, err := New(Options{ProjectDir: t.TempDir(), AuthToken: "s3cret-token", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.guard.Bind(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8766})
	close(d.ready)
	h := d.Handler()
	req := func(method, target string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		r.Host = "dash.lan:8766"
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := req("GET", "/", nil); w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "toolhost-token") {
		t.Fatalf("no token: %d %s", w.Code, w.Body)
	}
	if w := req("GET", "/api/state", map[string]string{"Authorization": "Bearer wrong"}); w.Code != http.StatusUnauthorized {
		t.Fatalf("wrong bearer: %d", w.Code)
	}
	if w := req("GET", "/?token=wrong", nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("wrong token in the URL: %d", w.Code)
	}
	w := req("GET", "/?token=s3cret-token", nil)
	cookie := w.Header().Get("Set-Cookie")
	if w.Code != http.StatusSeeOther || !strings.Contains(cookie, "toolhost_dashboard=s3cret-token") || !strings.Contains(cookie, "HttpOnly") ||
		!strings.Contains(cookie, "SameSite=Strict") || w.Header().Get("Location") != "/" {
		t.Fatalf("opening the printed URL: %d %q %q", w.Code, cookie, w.Header().Get("Location"))
	}
	if w := req("GET", "/", map[string]string{"Cookie": "toolhost_dashboard=s3cret-token"}); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "toolhost-token") {
		t.Fatalf("with the cookie: %d", w.Code)
	}
	if w := req("GET", "/api/state", map[string]string{"Authorization": "Bearer s3cret-token", "Origin": "http://dash.lan:8766"}); w.Code != http.StatusOK {
		t.Fatalf("bearer from the page's own origin: %d %s", w.Code, w.Body)
	}
	if w := req("GET", "/api/state", map[string]string{"Authorization": "Bearer s3cret-token", "Origin": "http://evil.example"}); w.Code != http.StatusForbidden {
		t.Fatalf("bearer from another origin: %d", w.Code)
	}
}
