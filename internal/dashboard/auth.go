package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Names on the wire of a human's sign-in.
const (
	sessionCookie   = "toolhost_session"
	pageTokenHeader = "X-Toolhost-Page-Token"
)

// Bounds of the sign-in.
const (
	// codeLen is the length of a one-time code: 10 characters of Crockford
	// base32, 50 bits.
	codeLen = 10
	// maxMisses wrong codes end the code in force (a new one is printed),
	// so guessing one is a 5 in 2^50 chance.
	maxMisses = 5
	// maxSessions bounds the browsers signed in at once; the oldest goes.
	maxSessions = 32
)

// crockford is the alphabet of the codes: no I, L, O or U to misread.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// signIn holds the one-time code printed on the dashboard's terminal and the
// sessions browsers got for it. A decision needs such a session: the code
// is only ever printed where `toolhost dashboard` runs, never served, put in
// a URL or a file, so a command an agent runs — which can read the project
// and GET every page — has no way to a session. Sessions live in this
// process's memory only.
type signIn struct {
	out io.Writer
	key []byte

	mu       sync.Mutex
	code     string
	misses   int
	sessions map[string]time.Time // session id → when it began
}

func newSignIn(out io.Writer, key []byte) *signIn {
	if out == nil {
		out = io.Discard
	}
	s := &signIn{out: out, key: key, sessions: map[string]time.Time{}}
	s.code = newCode()
	return s
}

func newCode() string {
	b := make([]byte, codeLen)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = crockford[int(b[i])%len(crockford)]
	}
	return string(b)
}

// show is how a code is printed: two groups of five.
func show(code string) string { return code[:codeLen/2] + "-" + code[codeLen/2:] }

// normCode reads a code as typed: any case, dashes and spaces ignored, and
// the letters Crockford reads as digits (O, I, L) taken as them.
func normCode(s string) string {
	r := strings.NewReplacer("-", "", " ", "", "O", "0", "I", "1", "L", "1")
	return r.Replace(strings.ToUpper(strings.TrimSpace(s)))
}

// announce prints the code in force on the terminal.
func (s *signIn) announce(lead string) {
	fmt.Fprintf(s.out, "toolhost dashboard: %sto approve or deny in the page, enter the code %s there (it works once; the next one is printed here)\n", lead, show(s.code))
}

// exchange trades a code for a new session id, or says why not.
func (s *signIn) exchange(typed, remote string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if subtle.ConstantTimeCompare([]byte(normCode(typed)), []byte(s.code)) != 1 {
		s.misses++
		if s.misses >= maxMisses {
			s.code, s.misses = newCode(), 0
			s.announce(fmt.Sprintf("%d wrong codes were entered (the last from %s), so that code no longer works; ", maxMisses, remote))
		}
		return "", fmt.Errorf("wrong code: enter the code printed where toolhost dashboard runs")
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	if len(s.sessions) >= maxSessions {
		var oldest string
		for k, t := range s.sessions {
			if oldest == "" || t.Before(s.sessions[oldest]) {
				oldest = k
			}
		}
		delete(s.sessions, oldest)
	}
	s.sessions[id] = time.Now()
	s.code, s.misses = newCode(), 0
	s.announce(fmt.Sprintf("a browser signed in at %s (from %s); ", time.Now().Format("15:04:05"), remote))
	return id, nil
}

// session returns the session r carries, "" for none.
func (s *signIn) session(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[c.Value]; !ok {
		return ""
	}
	return c.Value
}

// pageToken is a new token for a page of session: a random nonce and its
// HMAC over the session under the process's key. Any number of pages need
// no state, and a token is worthless without its session's cookie (and the
// cookie without a token: a request of another site carries the cookie but
// cannot read a page to learn a token).
func (s *signIn) pageToken(session string) string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(append(nonce, s.sign(session, nonce)...))
}

func (s *signIn) sign(session string, nonce []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("toolhost dashboard page\x00"))
	m.Write([]byte(session))
	m.Write([]byte{0})
	m.Write(nonce)
	return m.Sum(nil)[:16]
}

func (s *signIn) pageTokenOK(session, t string) bool {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if session == "" || err != nil || len(b) != 32 {
		return false
	}
	return hmac.Equal(b[16:], s.sign(session, b[:16]))
}

// signInHandler is POST /api/session {"code": "…"}: the browser trades the
// code from the terminal for a session (an HttpOnly, SameSite=Strict cookie
// that lives as long as the browser session, and this process) and the
// page token that goes with it.
func (d *Dashboard) signInHandler(w http.ResponseWriter, r *http.Request) {
	if !jsonContent(r) {
		fail(w, http.StatusUnsupportedMediaType, "send Content-Type: application/json")
		return
	}
	var in struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&in); err != nil {
		fail(w, http.StatusBadRequest, "send {\"code\": \"…\"}")
		return
	}
	id, err := d.auth.exchange(in.Code, r.RemoteAddr)
	if err != nil {
		d.o.Log.Warn().Str("event", "dashboard_sign_in_refused").Str("remote", r.RemoteAddr).Msg("a wrong sign-in code")
		fail(w, http.StatusForbidden, "%v", err)
		return
	}
	d.o.Log.Info().Str("event", "dashboard_sign_in").Str("remote", r.RemoteAddr).Msg("a browser signed in")
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]any{"token": d.auth.pageToken(id), "docs": "/doc/" + d.docKey() + "/", "project": d.dir})
}

// jsonContent reports whether r says its body is JSON: a form of another
// site cannot send that type without asking first.
func jsonContent(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return ct == "application/json" || strings.HasPrefix(ct, "application/json;")
}
