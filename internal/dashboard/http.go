package dashboard

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/visible"
	"github.com/toolhost/toolhost/internal/webguard"
)

// docRoots are the directories whose files /doc/ serves as they are: the
// document sites and the contracts. Other project files are shown as
// redacted text (/api/file).
var docRoots = []string{"prd", "sdd", "contracts", "archive"}

// Handler serves the page, its assets, the event stream and the API,
// behind the Host, Origin and token checks.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.page)
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", assetServer()))
	mux.HandleFunc("GET /api/events", d.events)
	mux.HandleFunc("GET /api/state", d.state)
	mux.HandleFunc("GET /api/audit", d.auditQuery)
	mux.HandleFunc("GET /api/bugs/{id}", d.bug)
	mux.HandleFunc("GET /api/file", d.file)
	mux.HandleFunc("GET /doc/{key}/{path...}", d.doc)
	mux.HandleFunc("POST /api/session", d.signInHandler)
	mux.HandleFunc("POST /api/confirmations/{id}/{decision}", d.decideHandler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if !d.guard.HostAllowed(r.Host) {
			http.Error(w, fmt.Sprintf("Host %q is not this loopback dashboard's (DNS rebinding protection); open http://127.0.0.1:%s/", r.Host, d.guard.Port()), http.StatusMisdirectedRequest)
			return
		}
		if o := r.Header.Get("Origin"); !d.originAllowed(o, r.Host) {
			http.Error(w, fmt.Sprintf("origin %q may not use this dashboard: only its own pages may", o), http.StatusForbidden)
			return
		}
		docs := d.docRequest(r)
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" && !docs && !(r.Method == http.MethodGet && r.URL.Path == "/" && r.Header.Get("Sec-Fetch-Mode") == "navigate") {
			// A page of another site may link to the dashboard, nothing more.
			http.Error(w, "a page of another site may not use this dashboard", http.StatusForbidden)
			return
		}
		if !d.guard.Loopback() && !docs && !publicOnAnyAddress(r) && d.auth.session(r) == "" {
			// Off loopback the project itself is only for a signed-in human.
			fail(w, http.StatusUnauthorized, "sign in first: enter the code printed where toolhost dashboard runs")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// originAllowed: the guard's rule (no Origin, or the server's own loopback
// origin); a dashboard on another address is its own origin under any name
// it is reached by, its token protecting it.
func (d *Dashboard) originAllowed(origin, host string) bool {
	if d.guard.OriginAllowed(origin) {
		return true
	}
	return !d.guard.Loopback() && webguard.NormOrigin(origin) == "http://"+strings.ToLower(host)
}

// publicOnAnyAddress reports whether r asks for what any visitor gets: the
// page's shell (without the token, the documents' key or the project), its
// assets, and the sign-in itself.
func publicOnAnyAddress(r *http.Request) bool {
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/assets/")):
		return true
	case r.Method == http.MethodPost && r.URL.Path == "/api/session":
		return true
	}
	return false
}

// docKey is the capability in the path of every document URL
// (/doc/KEY/prd/index.html). A document is served in a sandbox, an origin
// of its own, so the requests for its scripts and styles come cross-site
// and without the dashboard's cookie; the key, which only a page of the
// dashboard knows, is what lets them through — a page of another site
// cannot load the project's documents (their search index is a script).
// It grants reading documents, nothing else.
func (d *Dashboard) docKey() string {
	m := hmac.New(sha256.New, d.key)
	m.Write([]byte("toolhost dashboard documents"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// docRequest reports whether r reads a document with the right key.
func (d *Dashboard) docRequest(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/doc/")
	if !ok || r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	key, _, _ := strings.Cut(rest, "/")
	return subtle.ConstantTimeCompare([]byte(key), []byte(d.docKey())) == 1
}

// pageTemplate is parsed on the first page served, not at init: every
// toolhost process links the dashboard, few serve it.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(assets, "assets/index.html"))
})

func (d *Dashboard) page(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "+
		"frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Frame-Options", "DENY")
	// A page shows decisions it can make only to a signed-in browser: the
	// token is served with a session alone; off loopback the documents' key
	// and the project too.
	data := map[string]string{}
	session := d.auth.session(r)
	if session != "" {
		data["Token"] = d.auth.pageToken(session)
	}
	if session != "" || d.guard.Loopback() {
		data["Docs"], data["Project"] = "/doc/"+d.docKey()+"/", visible.Line(d.dir)
	}
	var b bytes.Buffer
	if err := pageTemplate().Execute(&b, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(b.Bytes())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, format string, a ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, a...)})
}

// waitReady waits for the state to be loaded, bounded: a page asks at
// once, a slow start must not hang it.
func (d *Dashboard) waitReady(r *http.Request) bool {
	select {
	case <-d.ready:
		return true
	case <-r.Context().Done():
		return false
	case <-time.After(10 * time.Second):
		return true
	}
}

func (d *Dashboard) state(w http.ResponseWriter, r *http.Request) {
	if !d.waitReady(r) {
		return
	}
	d.hub.mu.Lock()
	snap := d.st.snapshot(d.dir, time.Now())
	d.hub.mu.Unlock()
	writeJSON(w, http.StatusOK, snap)
}

// heartbeat keeps an idle stream open through proxies and shows a page
// that its server is gone.
const heartbeat = 15 * time.Second

// events is the Server-Sent Event stream: a snapshot (or, for a page that
// reconnects with Last-Event-ID, the changes it missed), then every change.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	if !d.waitReady(r) {
		return
	}
	rc := http.NewResponseController(w)
	h := d.hub
	h.mu.Lock()
	replay, ok := h.sinceLocked(r.Header.Get("Last-Event-ID"))
	var snap message
	if !ok {
		data, _ := json.Marshal(d.st.snapshot(d.dir, time.Now()))
		snap = message{id: h.seq, event: "snapshot", data: data}
	}
	c, err := h.subscribeLocked()
	h.mu.Unlock()
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	defer h.unsubscribe(c)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(m message) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", h.id(m.id), m.event, m.data)
		return err == nil && rc.Flush() == nil
	}
	if _, err := io.WriteString(w, "retry: 2000\n\n"); err != nil {
		return
	}
	if !ok && !send(snap) {
		return
	}
	for _, m := range replay {
		if !send(m) {
			return
		}
	}
	_ = rc.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case m, open := <-c.ch:
			if !open || !send(m) {
				return
			}
		case <-tick.C:
			_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// Bounds of a filtered audit query, which reads the trail from its end.
const (
	maxQueryRows = 500
	maxQueryScan = 2_000_000
	maxQueryTime = 2 * time.Second
)

// auditQuery returns the newest rows that pass a filter (agent, tool,
// status), for the stream's filters to show rows older than the page has.
func (d *Dashboard) auditQuery(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := audit.Filter{Agent: q.Get("agent"), Tool: q.Get("tool"), Status: q.Get("status")}
	limit := maxQueryRows
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && n < limit {
		limit = n
	}
	deadline := time.Now().Add(maxQueryTime)
	rows := []AuditRow{}
	scanned, complete := 0, true
	_, err := d.store.Audit().Backward(r.Context(), func(row *audit.Row) bool {
		scanned++
		if f.Match(row) || f.Agent != "" && shortAgent(row.Agent) == f.Agent && (audit.Filter{Tool: f.Tool, Status: f.Status}).Match(row) {
			rows = append(rows, auditRow(row))
		}
		if len(rows) >= limit {
			return false
		}
		if scanned >= maxQueryScan || scanned%4096 == 0 && time.Now().After(deadline) {
			complete = false
			return false
		}
		return true
	})
	if err != nil {
		fail(w, http.StatusInternalServerError, "reading the audit trail: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"rows": rows, "scanned": scanned, "complete": complete})
}

// bug returns one bug whole (redacted), with what the triager recorded.
func (d *Dashboard) bug(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !bugs.IDPattern().MatchString(id) {
		fail(w, http.StatusBadRequest, "bug id %q must look like BUG-0001", id)
		return
	}
	b, err := d.store.Bugs().Get(r.Context(), id)
	switch {
	case errors.Is(err, bugs.ErrNotFound):
		fail(w, http.StatusNotFound, "%v", err)
		return
	case err != nil:
		fail(w, http.StatusServiceUnavailable, "reading the bug: %v", err)
		return
	}
	raw, err := redact.Marshal(b)
	if err != nil {
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	out := map[string]any{"bug": json.RawMessage(raw)}
	var tri struct {
		Bugs map[string]json.RawMessage `json:"bugs"`
	}
	if ok, err := d.readJSON(bugs.TriageSummaryPath, &tri); ok && err == nil && tri.Bugs[id] != nil {
		if v, err := redact.Marshal(tri.Bugs[id]); err == nil {
			out["triage"] = json.RawMessage(v)
		}
	}
	var ev json.RawMessage
	if ok, err := d.readJSON(bugs.TriageRecordPath(id), &ev); ok && err == nil {
		if v, err := redact.Marshal(ev); err == nil {
			out["evidence"] = json.RawMessage(v)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// shownPath refuses a path the dashboard never shows: not a clean
// project-relative path, or one through a dot-file or dot-directory
// (toolhost's own .toolhost/, .env files, .git/). What remains the
// sandbox's read rules check again on the real tree (no symlink out).
func shownPath(rel string) error {
	switch {
	case rel == "" || strings.ContainsRune(rel, 0):
		return errors.New("name a file relative to the project dir")
	case strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../"):
		return fmt.Errorf("%q is not a clean path relative to the project dir", rel)
	}
	for _, c := range strings.Split(rel, "/") {
		if strings.HasPrefix(c, ".") {
			return fmt.Errorf("%q is a dot-file or inside a dot-directory, which the dashboard does not show", rel)
		}
	}
	return nil
}

// openShown opens a project file the dashboard may show (shownPath's
// rules, then the read door): the file, or the HTTP status to answer with
// and the error.
func (d *Dashboard) openShown(rel string) (*os.File, fs.FileInfo, int, error) {
	if err := shownPath(rel); err != nil {
		return nil, nil, http.StatusForbidden, err
	}
	f, fi, err := d.read.OpenRead(rel)
	if err != nil {
		status := http.StatusForbidden
		if errors.Is(err, fs.ErrNotExist) {
			status = http.StatusNotFound
		}
		return nil, nil, status, err
	}
	return f, fi, http.StatusOK, nil
}

// Bounds of a file shown as text.
const (
	maxFileShown  = 4 << 20
	fileLinesSide = 200
	fileLinesMax  = 2000
)

// file shows a project file as redacted text, around a line when one is
// asked for: the files and lines a bug cites.
func (d *Dashboard) file(w http.ResponseWriter, r *http.Request) {
	rel := r.URL.Query().Get("path")
	f, fi, status, err := d.openShown(rel)
	if err != nil {
		fail(w, status, "%v", err)
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileShown))
	if err != nil {
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if bytes.IndexByte(b[:min(len(b), 8192)], 0) >= 0 {
		fail(w, http.StatusUnsupportedMediaType, "%s is a binary file", rel)
		return
	}
	lines := strings.Split(strings.TrimSuffix(redact.String(string(b)), "\n"), "\n")
	line, _ := strconv.Atoi(r.URL.Query().Get("line"))
	start, end := 0, min(len(lines), fileLinesMax)
	if line > 0 {
		start, end = max(line-1-fileLinesSide, 0), min(line+fileLinesSide, len(lines))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"path": rel, "size": fi.Size(), "first_line": start + 1, "lines": lines[start:end], "line": line,
		"total_lines": len(lines), "truncated": fi.Size() > maxFileShown || end < len(lines) || start > 0,
	})
}

// doc serves a document of the sites or a contract as it is, read-only, in
// a sandbox (an opaque origin of its own): a page an agent wrote can run
// its scripts (the sites' search) but cannot read the dashboard's pages or
// its API (its requests come from origin "null", which is refused), nor
// keep anything in the dashboard's storage.
func (d *Dashboard) doc(w http.ResponseWriter, r *http.Request) {
	if !d.docRequest(r) {
		http.Error(w, "this document link is not from a page of this dashboard; open the document from the dashboard", http.StatusForbidden)
		return
	}
	rel := r.PathValue("path")
	top, _, _ := strings.Cut(rel, "/")
	allowed := false
	for _, root := range docRoots {
		allowed = allowed || top == root
	}
	if !allowed {
		http.Error(w, fmt.Sprintf("/doc/ serves the document sites and contracts (%s/); open other files from a bug", strings.Join(docRoots, "/, ")), http.StatusForbidden)
		return
	}
	f, fi, status, err := d.openShown(rel)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Security-Policy", "sandbox allow-scripts allow-popups; frame-ancestors 'none'")
	http.ServeContent(w, r, path.Base(rel), fi.ModTime(), f)
}

// decideHandler records a human's decision on a pending confirmation,
// exactly as `toolhost approve ID [--deny]` does (confirm.Store.Decide).
func (d *Dashboard) decideHandler(w http.ResponseWriter, r *http.Request) {
	session := d.auth.session(r)
	if session == "" {
		fail(w, http.StatusUnauthorized, "only a signed-in human decides: enter the code printed where toolhost dashboard runs")
		return
	}
	if !d.auth.pageTokenOK(session, r.Header.Get(pageTokenHeader)) {
		fail(w, http.StatusForbidden, "this request does not carry the token of a dashboard page; reload the page")
		return
	}
	if !jsonContent(r) {
		// A form of another site cannot send this type without asking first.
		fail(w, http.StatusUnsupportedMediaType, "send Content-Type: application/json")
		return
	}
	id, decision := r.PathValue("id"), r.PathValue("decision")
	if decision != "approve" && decision != "deny" {
		fail(w, http.StatusNotFound, "decide with …/approve or …/deny")
		return
	}
	e, err := d.store.Confirmations().Decide(r.Context(), id, decision == "approve")
	switch {
	case errors.Is(err, confirm.ErrNotFound):
		fail(w, http.StatusNotFound, "%v", err)
		return
	case errors.Is(err, confirm.ErrClosed), errors.Is(err, confirm.ErrExpired):
		fail(w, http.StatusConflict, "%v", err)
		return
	case err != nil:
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	d.o.Log.Info().Str("event", "confirmation_decided").Str("id", e.ID).Str("decision", e.Status).Str("tool", e.Tool).
		Str("agent", e.Agent).Str("remote", r.RemoteAddr).Msg("a human decided a confirmation in the dashboard")
	effect := "may now run once"
	if decision == "deny" {
		effect = "will be refused"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": e.ID, "status": e.Status, "expires_at": e.ExpiresAt,
		"message": fmt.Sprintf("the next call of %s by agent %s with the same arguments %s (until %s)", e.Tool, e.Agent, effect, e.ExpiresAt.Format(time.RFC3339)),
	})
}
