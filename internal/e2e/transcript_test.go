package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/toolhost/toolhost/internal/audit"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the output sections of the transcripts")

// A transcript is a txtar archive:
//
//	-- args --    serve flags after --project-dir/--agents (one line)
//	-- policy --  optional: JSON merged into the embedded tool policy
//	              (entries of "tools" merged per tool, other keys replaced),
//	              served with --policy
//	-- input --   lines sent to the server; directives start with '#':
//	              #wait ID [TIMEOUT]  block until the response to ID arrives
//	              #sleep DURATION
//	              #big BYTES          send a line of BYTES bytes (oversized input)
//	              {{state:ID}} in a line is the requestState of the response
//	              to ID ({{state:ID:tampered}}: the same with its signature
//	              altered)
//	-- output --  every message the server wrote, normalised, responses sorted
//	              by id, then notifications in arrival order
//	-- audit --   optional: the audit rows the calls left, one "tool status
//	              kind" line each, sorted
//
// Every transcript runs over both transports from the same source: stdio
// (one line each, stdin closed after the last, so "EOF with a call in
// flight" is the default) and Streamable HTTP (one POST each, with the
// headers a conforming client sends; SIGTERM after the last). The output
// must be the same.
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/transcripts/*.txtar")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	bin := binary(t)
	agents := agentsFile(t)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		for _, tr := range []string{"stdio", "http"} {
			t.Run(name+"/"+tr, func(t *testing.T) {
				t.Parallel()
				runTranscript(t, bin, agents, file, tr)
			})
		}
	}
}

func section(a *txtar.Archive, name string) string {
	for _, f := range a.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

type received struct {
	mu    sync.Mutex
	lines []string
	byID  map[string]chan struct{}
	// states are the requestStates of the responses, by id.
	states map[string]string
}

func newReceived() *received {
	return &received{byID: map[string]chan struct{}{}, states: map[string]string{}}
}

func (r *received) waitFor(id string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.byID[id]
	if !ok {
		ch = make(chan struct{})
		r.byID[id] = ch
	}
	return ch
}

// add records one message the server wrote.
func (r *received) add(line string) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	_ = json.Unmarshal([]byte(line), &m)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	if len(m.ID) == 0 {
		return
	}
	id := string(m.ID)
	if m.Result.RequestState != "" {
		r.states[id] = m.Result.RequestState
	}
	ch, ok := r.byID[id]
	if !ok {
		ch = make(chan struct{})
		r.byID[id] = ch
	}
	select {
	case <-ch:
	default:
		close(ch)
	}
}

var statePlaceholder = regexp.MustCompile(`\{\{state:([^}:]+)(:tampered)?\}\}`)

// expand fills the {{state:ID}} placeholders of an input line.
func (r *received) expand(t *testing.T, line string) string {
	return statePlaceholder.ReplaceAllStringFunc(line, func(ph string) string {
		m := statePlaceholder.FindStringSubmatch(ph)
		r.mu.Lock()
		st, ok := r.states[m[1]]
		r.mu.Unlock()
		if !ok {
			t.Fatalf("%s: no requestState was answered to id %s (add #wait %s before)", ph, m[1], m[1])
		}
		if m[2] != "" {
			// Alter one character of the signed part (the payload).
			i := len(st) / 4
			repl := byte('A')
			if st[i] == 'A' {
				repl = 'B'
			}
			st = st[:i] + string(repl) + st[i+1:]
		}
		return st
	})
}

// transcriptTransport carries the input lines of a transcript to one
// server and what it writes back to a received.
type transcriptTransport interface {
	send(t *testing.T, line string)
	// finish ends the input (stdio: EOF; HTTP: SIGTERM) and waits for the
	// server to exit 0, returning its stderr.
	finish(t *testing.T) string
	stderr() string
}

// policyFile writes the embedded tool policy with the transcript's
// overrides merged in.
func policyFile(t *testing.T, overrides string) string {
	var base map[string]json.RawMessage
	if err := json.Unmarshal(configs.ToolsJSON, &base); err != nil {
		t.Fatal(err)
	}
	var over map[string]json.RawMessage
	if err := json.Unmarshal([]byte(overrides), &over); err != nil {
		t.Fatalf("-- policy -- is not JSON: %v", err)
	}
	for k, v := range over {
		if k != "tools" {
			base[k] = v
			continue
		}
		var tools, more map[string]map[string]any
		_ = json.Unmarshal(base["tools"], &tools)
		_ = json.Unmarshal(v, &more)
		for name, rule := range more {
			if tools[name] == nil {
				tools[name] = map[string]any{}
			}
			for rk, rv := range rule {
				tools[name][rk] = rv
			}
		}
		base["tools"], _ = json.Marshal(tools)
	}
	b, _ := json.MarshalIndent(base, "", "  ")
	p := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runTranscript(t *testing.T, bin, agents, file, transport string) {
	a, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	args := append([]string{"--project-dir", project, "--agents", agents, "--session", "sess-transcript"},
		strings.Fields(section(a, "args"))...)
	if p := section(a, "policy"); strings.TrimSpace(p) != "" {
		args = append(args, "--policy", policyFile(t, p))
	}
	got := newReceived()
	var tr transcriptTransport
	if transport == "http" {
		tr = startHTTPTranscript(t, bin, args, got)
	} else {
		tr = startStdioTranscript(t, bin, args, got)
	}
	for n, line := range strings.Split(section(a, "input"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			tr.send(t, got.expand(t, line))
			continue
		}
		f := strings.Fields(line)
		switch f[0] {
		case "#wait":
			timeout := 3 * time.Second
			if len(f) > 2 {
				timeout, _ = time.ParseDuration(f[2])
			}
			select {
			case <-got.waitFor(f[1]):
			case <-time.After(timeout):
				t.Fatalf("input line %d: no response to id %s within %v\nstderr:\n%s", n+1, f[1], timeout, tr.stderr())
			}
		case "#sleep":
			d, _ := time.ParseDuration(f[1])
			time.Sleep(d)
		case "#big":
			size, _ := strconv.Atoi(f[1])
			tr.send(t, `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"debug_echo","arguments":{"text":"`+
				strings.Repeat("x", size)+`"}}}`)
		default:
			t.Fatalf("input line %d: unknown directive %s", n+1, f[0])
		}
	}
	stderr := tr.finish(t)
	got.mu.Lock()
	for i, l := range got.lines {
		got.lines[i] = strings.ReplaceAll(l, project, "<PROJECT>")
	}
	actual := normalise(got.lines)
	got.mu.Unlock()
	hasAudit := false
	for _, f := range a.Files {
		hasAudit = hasAudit || f.Name == "audit"
	}
	auditText := ""
	if hasAudit {
		auditText = auditSummary(t, project)
	}
	if *update {
		if transport != "stdio" {
			return // the stdio run writes the file; this one must match it
		}
		for i := range a.Files {
			switch a.Files[i].Name {
			case "output":
				a.Files[i].Data = []byte(actual)
			case "audit":
				a.Files[i].Data = []byte(auditText)
			}
		}
		if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := section(a, "output"); want != actual {
		t.Errorf("output mismatch over %s (run with -update to accept)\n--- want\n%s--- got\n%s\nstderr:\n%s", transport, want, actual, stderr)
	}
	if want := section(a, "audit"); hasAudit && want != auditText {
		t.Errorf("audit mismatch over %s (run with -update to accept)\n--- want\n%s--- got\n%s", transport, want, auditText)
	}
}

// auditSummary is one "tool status kind" line per audit row, sorted, with
// the call id the client chose (not a generated ULID), the unit, the trace
// context and the policy rule that decided when the row has them.
func auditSummary(t *testing.T, project string) string {
	var lines []string
	bad, err := audit.Each(project, audit.Filter{}, func(row *audit.Row) error {
		line := strings.TrimSpace(row.Tool + " " + string(row.Status) + " " + row.ErrorKind)
		if !volatile[0].re.MatchString(row.CallID) {
			line += " call=" + row.CallID
		}
		if row.UnitID != "" {
			line += " unit=" + row.UnitID
		}
		if row.Traceparent != "" {
			line += " trace=" + row.Traceparent
		}
		if row.Rule != "" {
			line += " rule=" + row.Rule
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil || bad.Count > 0 {
		t.Fatalf("audit trail: %v %s", err, bad)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

type stdioTranscript struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	errBuf   *testutil.SyncBuffer
	readDone chan struct{}
}

func startStdioTranscript(t *testing.T, bin string, args []string, got *received) *stdioTranscript {
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	s := &stdioTranscript{cmd: cmd, errBuf: &testutil.SyncBuffer{}, readDone: make(chan struct{})}
	cmd.Stderr = s.errBuf
	s.stdin, _ = cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.readDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			got.add(sc.Text())
		}
	}()
	return s
}

func (s *stdioTranscript) send(t *testing.T, line string) {
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func (s *stdioTranscript) stderr() string { return s.errBuf.String() }

func (s *stdioTranscript) finish(t *testing.T) string {
	_ = s.stdin.Close()
	waitErr := make(chan error, 1)
	go func() { <-s.readDone; waitErr <- s.cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("server exit: %v\nstderr:\n%s", err, s.stderr())
		}
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Fatalf("server did not exit after stdin closed\nstderr:\n%s", s.stderr())
	}
	return s.stderr()
}

// httpTranscript POSTs each line as a conforming Streamable HTTP client
// would: the 2026-07-28 request headers mirrored from the body, and the
// session id of the latest 2025 initialize on 2025 requests. A 2025
// request needs a session over HTTP (400 without one), so a transcript
// whose 2025 requests come before any initialize — a stdio client that
// never initializes — runs them in a session begun by an initialize of its
// own, whose answer is not part of the output.
type httpTranscript struct {
	srv     *testutil.HTTPServer
	got     *received
	client  *http.Client
	mu      sync.Mutex
	session string
	posts   sync.WaitGroup
}

func startHTTPTranscript(t *testing.T, bin string, args []string, got *received) *httpTranscript {
	srv := testutil.ServeHTTP(t, bin, args...)
	return &httpTranscript{srv: srv, got: got,
		client: &http.Client{Transport: testutil.Bearer(srv.Token, &http.Transport{MaxIdleConnsPerHost: 64})}}
}

func (h *httpTranscript) stderr() string { return h.srv.Log() }

func (h *httpTranscript) send(t *testing.T, line string) {
	req, err := http.NewRequest(http.MethodPost, h.srv.URL, strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			Meta struct {
				Version string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal([]byte(line), &m)
	if v := m.Params.Meta.Version; v != "" {
		req.Header.Set("MCP-Protocol-Version", v)
		req.Header.Set("Mcp-Method", m.Method)
		if m.Method == "tools/call" {
			req.Header.Set("Mcp-Name", m.Params.Name)
		}
	} else {
		h.mu.Lock()
		session := h.session
		h.mu.Unlock()
		switch {
		case m.Method == "initialize":
			// Its answer names the session the next lines go to.
			h.syncPost(t, req, true)
			return
		case session == "":
			init, _ := http.NewRequest(http.MethodPost, h.srv.URL, strings.NewReader(
				`{"jsonrpc":"2.0","id":"implicit-initialize","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"transcript","version":"1"}}}`))
			init.Header.Set("Content-Type", "application/json")
			init.Header.Set("Accept", "application/json, text/event-stream")
			h.syncPost(t, init, false)
			h.mu.Lock()
			session = h.session
			h.mu.Unlock()
		}
		req.Header.Set("Mcp-Session-Id", session)
	}
	h.posts.Add(1)
	sent := make(chan struct{})
	var once sync.Once
	written := func() { once.Do(func() { close(sent) }) }
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { written() },
	}))
	go func() {
		defer h.posts.Done()
		resp, err := h.client.Do(req)
		written()
		if err != nil {
			h.got.add("NOT JSON: POST failed: " + err.Error())
			return
		}
		defer resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			h.mu.Lock()
			h.session = id
			h.mu.Unlock()
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					h.got.add(d)
				}
			}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		if len(bytes.TrimSpace(b)) > 0 {
			h.got.add(string(b))
		}
	}()
	// Lines leave in order: the next is sent once this one is on the wire.
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatalf("the POST of %.80s was not sent within 10 s", line)
	}
}

// syncPost sends req and reads its answer before returning, keeping the
// session it names; record puts the answer in the output.
func (h *httpTranscript) syncPost(t *testing.T, req *http.Request, record bool) {
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", req.URL, err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		h.mu.Lock()
		h.session = id
		h.mu.Unlock()
	}
	b, _ := io.ReadAll(resp.Body)
	if !record {
		return
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				h.got.add(d)
			}
		}
		return
	}
	if len(bytes.TrimSpace(b)) > 0 {
		h.got.add(string(b))
	}
}

// settle is how long the last POSTs get to be read by the server before
// SIGTERM: stdio's EOF comes after the last line is in the pipe; a POST on
// the wire may still wait for the server to read it, and a request read
// after shutdown began is refused.
const settle = time.Second

func (h *httpTranscript) finish(t *testing.T) string {
	time.Sleep(settle)
	if err := h.srv.Stop(t); err != nil {
		t.Fatalf("server exit: %v\nstderr:\n%s", err, h.srv.Log())
	}
	h.posts.Wait()
	return h.srv.Log()
}

var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`), "<ULID>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<TS>"},
	{regexp.MustCompile(`(\\?")(duration_ms|elapsed_ms|slept_ms)(\\?"):\s*[0-9.]+`), `${1}${2}${3}:0`},
	{regexp.MustCompile(`"requestState":"[^"]*"`), `"requestState":"<STATE>"`},
}

// normalise canonicalises each message (sorted keys), masks volatile values
// and orders responses by id, then notifications in arrival order.
func normalise(lines []string) string {
	type msg struct {
		key  string
		text string
	}
	var resp, notes []msg
	for _, l := range lines {
		for _, v := range volatile {
			l = v.re.ReplaceAllString(l, v.with)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			notes = append(notes, msg{text: "NOT JSON: " + l})
			continue
		}
		b, _ := json.Marshal(v)
		if id, ok := v["id"]; ok {
			resp = append(resp, msg{key: fmt.Sprintf("%v", id), text: string(b)})
		} else {
			notes = append(notes, msg{text: string(b)})
		}
	}
	// Answers that share an id (null: the unreadable messages) are sorted
	// by content: over HTTP they come back on separate connections.
	sort.SliceStable(resp, func(i, j int) bool {
		a, aerr := strconv.Atoi(resp[i].key)
		b, berr := strconv.Atoi(resp[j].key)
		switch {
		case aerr == nil && berr == nil && a != b:
			return a < b
		case resp[i].key != resp[j].key && (aerr != nil || berr != nil):
			return resp[i].key < resp[j].key
		}
		return resp[i].text < resp[j].text
	})
	var sb strings.Builder
	for _, m := range append(resp, notes...) {
		sb.WriteString(m.text + "\n")
	}
	return sb.String()
}
