package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// testHandler answers "echo" with its params, "block" when released (or
// its context ends), "fail" with -32602 and "boom" with a plain error.
type testHandler struct {
	mu      sync.Mutex
	calls   []string
	notes   []string
	started chan string
	release chan struct{}
}

func newHandler() *testHandler {
	return &testHandler{started: make(chan string, 100), release: make(chan struct{})}
}

func (h *testHandler) Handle(ctx context.Context, _ Peer, req Request) (any, error) {
	method, params := req.Method, req.Params
	h.mu.Lock()
	h.calls = append(h.calls, method)
	h.mu.Unlock()
	switch method {
	case "echo":
		return params, nil
	case "block":
		h.started <- string(params)
		select {
		case <-h.release:
			return map[string]string{"released": string(params)}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	case "fail":
		return nil, NewError(CodeInvalidParams, "bad params")
	case "boom":
		return nil, errors.New("boom")
	}
	return nil, NewError(CodeMethodNotFound, "no "+method)
}

func (h *testHandler) Notification(_ context.Context, _ Peer, method string, _ json.RawMessage) {
	h.mu.Lock()
	h.notes = append(h.notes, method)
	h.mu.Unlock()
}

func (h *testHandler) called() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

// serve runs a whole session over input and returns what was written.
func serve(t *testing.T, input string, h Handler, opts Options) string {
	t.Helper()
	var out bytes.Buffer
	if opts.Log.GetLevel() == zerolog.TraceLevel {
		opts.Log = zerolog.Nop()
	}
	if err := Serve(context.Background(), strings.NewReader(input), &out, h, opts); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeLines parses newline-delimited output, failing on anything that
// is not a JSON-RPC 2.0 message.
func decodeLines(t *testing.T, out string) []wireMsg {
	t.Helper()
	var msgs []wireMsg
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var probe struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(l), &probe); err != nil || probe.JSONRPC != "2.0" {
			t.Fatalf("non JSON-RPC output line %q", l)
		}
		var m wireMsg
		_ = json.Unmarshal([]byte(l), &m)
		msgs = append(msgs, m)
	}
	return msgs
}

func byID(msgs []wireMsg) map[string]wireMsg {
	m := map[string]wireMsg{}
	for _, x := range msgs {
		m[string(x.ID)] = x
	}
	return m
}

func TestNDJSONFraming(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("\n", 1000) +
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{\"a\":1}}\r\n" +
		"   \t  \r\n" +
		"{ \"jsonrpc\" : \"2.0\", \"id\" : \"two\", \"method\" : \"echo\" }\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\"}" // no final newline
	msgs := byID(decodeLines(t, serve(t, in, newHandler(), Options{})))
	if len(msgs) != 3 {
		t.Fatalf("want 3 answers, got %v", msgs)
	}
	if string(msgs["1"].Result) != `{"a":1}` {
		t.Errorf("id 1: %s", msgs["1"].Result)
	}
	if _, ok := msgs[`"two"`]; !ok {
		t.Errorf("string id not answered: %v", msgs)
	}
	if _, ok := msgs["3"]; !ok {
		t.Errorf("last line without newline not answered: %v", msgs)
	}
}

func TestMalformedInputKeepsServing(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	deepObj := `{"jsonrpc":"2.0","id":5,"method":"echo","params":` + strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000) + "}"
	cases := []struct {
		line string
		code int
	}{
		{"not json", CodeParseError},
		{string([]byte{0, 1, 2, 0xff, 0xfe}), CodeParseError},
		{`[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, CodeInvalidRequest},
		{deep, CodeInvalidRequest},
		{deepObj, CodeParseError},
		{`"a string"`, CodeInvalidRequest},
		{`null`, CodeInvalidRequest},
		{`{"id":1,"method":"echo"}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"echo","result":1}`, CodeInvalidRequest},
	}
	for _, c := range cases {
		in := c.line + "\n" + `{"jsonrpc":"2.0","id":"next","method":"echo"}` + "\n"
		out := serve(t, in, newHandler(), Options{})
		// Errors for unserved lines leave in the same envelope as every
		// other response (one writer), not in a second spelling of it.
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":`) {
				t.Errorf("%.60q: response not in the common envelope: %.120s", c.line, l)
			}
		}
		msgs := decodeLines(t, out)
		if len(msgs) != 2 {
			t.Fatalf("%.60q: want an error and an answer, got %d messages", c.line, len(msgs))
		}
		var errMsg, next *wireMsg
		for i := range msgs {
			if string(msgs[i].ID) == `"next"` {
				next = &msgs[i]
			} else {
				errMsg = &msgs[i]
			}
		}
		if next == nil || next.Error != nil {
			t.Errorf("%.60q: the next good line was not served: %+v", c.line, msgs)
		}
		if errMsg == nil || errMsg.Error == nil || errMsg.Error.Code != c.code {
			t.Errorf("%.60q: want error %d, got %+v", c.line, c.code, errMsg)
		}
	}
}

// TestOversizedLineIsDiscardedWhole: a message over the cap is answered
// with the id read from its start (null when that cannot be read) and
// skipped whole; the next line is served.
func TestOversizedLineIsDiscardedWhole(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("a", 1<<20)
	big := `{"jsonrpc":"2.0","id":9,"method":"echo","params":{"x":"` + pad + `"}}`
	late := `{"jsonrpc":"2.0","params":{"x":"` + pad + `"},"id":10,"method":"echo"}`
	in := big + "\n" + `{"jsonrpc":"2.0","id":1,"method":"echo"}` + "\n" + late + "\n" + big // the last without newline
	msgs := decodeLines(t, serve(t, in, newHandler(), Options{MaxMessage: 1 << 10}))
	if len(msgs) != 4 {
		t.Fatalf("want 4 messages, got %+v", msgs)
	}
	var ids []string
	for _, m := range msgs {
		if m.Error != nil && m.Error.Code == CodeInvalidRequest && strings.Contains(m.Error.Message, "1024-byte limit") {
			ids = append(ids, string(m.ID))
		}
	}
	if strings.Join(ids, ",") != "9,null,9" || string(byID(msgs)["1"].Result) != "null" {
		t.Fatalf("want size errors for ids 9, null (id after the params), 9 and id 1 answered, got %v %+v", ids, msgs)
	}
}

// TestCapIsExact: a message of exactly the cap is served, one byte more is
// refused, whatever the line ending and the framing.
func TestCapIsExact(t *testing.T) {
	t.Parallel()
	const limit = 200
	msg := func(n int) string {
		m := `{"jsonrpc":"2.0","id":1,"method":"echo","params":"`
		m += strings.Repeat("x", n-len(m)-2) + `"}`
		if len(m) != n {
			t.Fatalf("built %d bytes, want %d", len(m), n)
		}
		return m
	}
	for _, c := range []struct {
		name  string
		input func(m string) string
		lsp   bool
	}{
		{"ndjson LF", func(m string) string { return m + "\n" }, false},
		{"ndjson CRLF", func(m string) string { return m + "\r\n" }, false},
		{"ndjson at EOF", func(m string) string { return m }, false},
		{"lsp", func(m string) string { return "Content-Length: " + itoa(len(m)) + "\r\n\r\n" + m }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			decode := decodeLines
			if c.lsp {
				decode = lspOut
			}
			ok := decode(t, serve(t, c.input(msg(limit)), newHandler(), Options{MaxMessage: limit, LSP: c.lsp}))
			if len(ok) != 1 || ok[0].Error != nil {
				t.Errorf("a message of exactly %d bytes must be served: %+v", limit, ok)
			}
			over := decode(t, serve(t, c.input(msg(limit+1)), newHandler(), Options{MaxMessage: limit, LSP: c.lsp}))
			if len(over) != 1 || over[0].Error == nil || over[0].Error.Code != CodeInvalidRequest || string(over[0].ID) != "1" {
				t.Errorf("a message of %d bytes must be refused with its id: %+v", limit+1, over)
			}
		})
	}
}

// TestVersionIsReadFromTheEnvelope: "jsonrpc":"2.0" anywhere but at the top
// level does not make a message JSON-RPC 2.0.
func TestVersionIsReadFromTheEnvelope(t *testing.T) {
	t.Parallel()
	h := newHandler()
	msgs := decodeLines(t, serve(t, `{"id":1,"method":"echo","params":{"jsonrpc":"2.0"}}`+"\n", h, Options{}))
	if len(msgs) != 1 || msgs[0].Error == nil || msgs[0].Error.Code != CodeInvalidRequest || string(msgs[0].ID) != "1" {
		t.Fatalf("want -32600 for id 1, got %+v", msgs)
	}
	if c := h.called(); len(c) != 0 {
		t.Fatalf("the request ran: %v", c)
	}
}

func TestLeadingID(t *testing.T) {
	t.Parallel()
	for prefix, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"aaa`: `7`,
		`{"id":"abc","params":{`:              `"abc"`,
		`{"jsonrpc":"2.0","params":{"x":"aaa`: ``,
		`{"id":-1,"params":`:                  ``,
		`{"id":null,"x":`:                     ``,
		`{"method":"x","id":{"a":1},"p":`:     ``,
		`[{"id":1}`:                           ``,
		`{"id":12`:                            ``,
	} {
		if got := string(LeadingID([]byte(prefix))); got != want {
			t.Errorf("LeadingID(%q) = %q, want %q", prefix, got, want)
		}
	}
}

func TestErrorCodes(t *testing.T) {
	t.Parallel()
	in := `{"jsonrpc":"2.0","id":1,"method":"fail"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"boom"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"nope"}` + "\n"
	msgs := byID(decodeLines(t, serve(t, in, newHandler(), Options{})))
	for id, code := range map[string]int{"1": CodeInvalidParams, "2": CodeInternalError, "3": CodeMethodNotFound} {
		if msgs[id].Error == nil || msgs[id].Error.Code != code {
			t.Errorf("id %s: want %d, got %+v", id, code, msgs[id])
		}
	}
}

// TestIDs: every id the server answers is the id the client sent, and a
// request whose id cannot be answered faithfully is refused, not run.
func TestIDs(t *testing.T) {
	t.Parallel()
	ok := []string{`0`, `7`, `9223372036854775807`, `"s"`, `""`, `"1"`}
	for _, id := range ok {
		msgs := decodeLines(t, serve(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"echo"}`+"\n", newHandler(), Options{}))
		if len(msgs) != 1 || string(msgs[0].ID) != id || msgs[0].Error != nil {
			t.Errorf("id %s: got %+v", id, msgs)
		}
	}
	refused := map[string]string{
		`-1`:                             `-1`,
		`-9223372036854775808`:           `-9223372036854775808`,
		`1.5`:                            `1.5`,
		`123456789012345678901234567890`: `123456789012345678901234567890`,
		`null`:                           `null`,
		`true`:                           `null`,
		`{"a":1}`:                        `null`,
		`[1]`:                            `null`,
	}
	for id, want := range refused {
		h := newHandler()
		msgs := decodeLines(t, serve(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"echo"}`+"\n", h, Options{}))
		if len(msgs) != 1 || string(msgs[0].ID) != want || msgs[0].Error == nil || msgs[0].Error.Code != CodeInvalidRequest {
			t.Errorf("id %s: want -32600 with id %s, got %+v", id, want, msgs)
		}
		if c := h.called(); len(c) != 0 {
			t.Errorf("id %s: the request ran (%v)", id, c)
		}
	}
	// The key spelled with an escape is the same key.
	msgs := decodeLines(t, serve(t, `{"jsonrpc":"2.0","\u0069d":null,"method":"echo"}`+"\n", newHandler(), Options{}))
	if len(msgs) != 1 || msgs[0].Error == nil || msgs[0].Error.Code != CodeInvalidRequest {
		t.Errorf(`escaped "id" null: want -32600, got %+v`, msgs)
	}
}

// TestNotifications: no answer, whatever their params; notifications/cancelled
// never reaches the handler.
func TestNotifications(t *testing.T) {
	t.Parallel()
	h := newHandler()
	in := `{"jsonrpc":"2.0","method":"notifications/initialized","params":[1,2]}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"str"}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"a":1}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}` + "\n" +
		`{"jsonrpc":"2.0","method":"other"}` + "\n"
	if out := serve(t, in, h, Options{}); out != "" {
		t.Fatalf("notifications were answered: %s", out)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.Join(h.notes, ",") != "notifications/initialized,other" {
		t.Fatalf("handler saw %v", h.notes)
	}
}

// session is a Serve over pipes that a test writes to line by line.
type session struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *io.PipeReader
	lines chan string
	done  chan error
}

func startSession(t *testing.T, h Handler, opts Options) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: outR, lines: make(chan string, 1000), done: make(chan error, 1)}
	opts.Log = zerolog.Nop()
	go func() {
		s.done <- Serve(context.Background(), inR, outW, h, opts)
		_ = outW.Close()
	}()
	go func() {
		buf := make([]byte, 0, 1<<16)
		one := make([]byte, 1)
		for {
			if _, err := outR.Read(one); err != nil {
				close(s.lines)
				return
			}
			if one[0] == '\n' {
				s.lines <- string(buf)
				buf = buf[:0]
				continue
			}
			buf = append(buf, one[0])
		}
	}()
	return s
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) next() wireMsg {
	s.t.Helper()
	l, ok := <-s.lines
	if !ok {
		s.t.Fatal("output ended")
	}
	return decodeLines(s.t, l)[0]
}

// finish closes the input and returns the rest of the output.
func (s *session) finish() []wireMsg {
	s.t.Helper()
	_ = s.in.Close()
	var rest []wireMsg
	for l := range s.lines {
		rest = append(rest, decodeLines(s.t, l)...)
	}
	if err := <-s.done; err != nil {
		s.t.Fatal(err)
	}
	return rest
}

// TestCancel: a cancelled call gets no answer; cancelling an unknown or a
// finished id, or before the request arrives, changes nothing.
func TestCancel(t *testing.T) {
	t.Parallel()
	h := newHandler()
	s := startSession(t, h, Options{})
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`) // before the request
	s.send(`{"jsonrpc":"2.0","id":1,"method":"block","params":"one"}`)
	s.send(`{"jsonrpc":"2.0","id":"1","method":"block","params":"str-one"}`)
	<-h.started
	<-h.started
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":"after-cancel"}`)
	if m := s.next(); string(m.ID) != "2" {
		t.Fatalf("want id 2 answered first, got %+v", m)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)  // finished
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`) // unknown
	s.send(`{"jsonrpc":"2.0","id":3,"method":"echo","params":"three"}`)
	if m := s.next(); string(m.ID) != "3" || string(m.Result) != `"three"` {
		t.Fatalf("a cancel sent before its request took effect: %+v", m)
	}
	close(h.release)
	rest := s.finish()
	if len(rest) != 1 || string(rest[0].ID) != `"1"` {
		t.Fatalf("want only the string id \"1\" answered (numeric 1 was cancelled), got %+v", rest)
	}
}

// TestDuplicateIDInFlight: a second request reusing the id of one still in
// flight is refused, and a cancel for that id reaches the first.
func TestDuplicateIDInFlight(t *testing.T) {
	t.Parallel()
	h := newHandler()
	s := startSession(t, h, Options{})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"block","params":"first"}`)
	<-h.started
	s.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":"second"}`)
	m := s.next()
	if string(m.ID) != "1" || m.Error == nil || m.Error.Code != CodeInvalidRequest {
		t.Fatalf("want the duplicate refused with -32600, got %+v", m)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":"reused"}`)
	if m := s.next(); string(m.Result) != `"reused"` {
		t.Fatalf("the id was not free again after its call was cancelled: %+v", m)
	}
	close(h.release)
	if rest := s.finish(); len(rest) != 0 {
		t.Fatalf("the cancelled first call was answered: %+v", rest)
	}
}

// TestDrainOnEOF: every call in flight when input ends is answered.
func TestDrainOnEOF(t *testing.T) {
	t.Parallel()
	h := newHandler()
	s := startSession(t, h, Options{})
	for i := range 100 {
		s.send(`{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":"block"}`)
	}
	for range 100 {
		<-h.started
	}
	close(h.release)
	rest := s.finish()
	if len(rest) != 100 {
		t.Fatalf("want 100 answers, got %d", len(rest))
	}
	for _, m := range rest {
		if m.Error != nil {
			t.Fatalf("error answer: %+v", m)
		}
	}
}

// TestDrainGraceCancels: calls still running after the grace period are
// cancelled with ErrShutdown as the cause, and answered (not dropped as
// client cancellations).
func TestDrainGraceCancels(t *testing.T) {
	t.Parallel()
	h := newHandler()
	s := startSession(t, h, Options{Grace: time.Millisecond})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	<-h.started
	rest := s.finish()
	if len(rest) != 1 || rest[0].Error == nil || rest[0].Error.Code != CodeInternalError || rest[0].Error.Message != ErrShutdown.Error() {
		t.Fatalf("want the cancelled call answered with the shutdown cause, got %+v", rest)
	}
}

// TestShutdownRefusesNewCalls: after ctx is cancelled, in-flight calls
// finish and are answered; Serve returns.
func TestShutdown(t *testing.T) {
	t.Parallel()
	h := newHandler()
	inR, inW := io.Pipe()
	defer inW.Close()
	var out syncBuf
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, inR, &out, h, Options{Log: zerolog.Nop()}) }()
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"block"}`+"\n")
	<-h.started
	cancel()
	close(h.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	msgs := decodeLines(t, out.String())
	if len(msgs) != 1 || string(msgs[0].ID) != "1" || msgs[0].Error != nil {
		t.Fatalf("want id 1 answered, got %+v", msgs)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// brokenPipe fails every write as a closed stdout does.
type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestWriteFailureEndsSession: once output cannot be written (the client
// closed its end) the session ends, though input stays open: nobody can
// receive another answer.
func TestWriteFailureEndsSession(t *testing.T) {
	t.Parallel()
	h := newHandler()
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), inR, brokenPipe{}, h, Options{Log: zerolog.Nop()}) }()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"block"}`+"\n")
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"echo"}`+"\n")
	}()
	<-h.started
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve kept waiting for input after stdout failed; it must end the session")
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// gate is a handler whose "hold" requests each wait for a token, and
// that records how many ran at once.
type gate struct {
	mu      sync.Mutex
	running int
	most    int
	started chan struct{}
	tokens  chan struct{}
}

func (g *gate) Handle(ctx context.Context, _ Peer, req Request) (any, error) {
	if req.Method != "hold" {
		return nil, NewError(CodeMethodNotFound, "no "+req.Method)
	}
	g.mu.Lock()
	g.running++
	g.most = max(g.most, g.running)
	g.mu.Unlock()
	g.started <- struct{}{}
	select {
	case <-g.tokens:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	return "held", nil
}

func (g *gate) Notification(context.Context, Peer, string, json.RawMessage) {}

// TestStdioBackpressure: past MaxInFlight the reader stops reading and
// waits for a slot instead of refusing: of 40 requests sent at once with a
// bound of 3, never more than 3 run, and every one is answered with its
// result.
func TestStdioBackpressure(t *testing.T) {
	t.Parallel()
	const n, bound = 40, 3
	g := &gate{started: make(chan struct{}, n), tokens: make(chan struct{})}
	s := startSession(t, g, Options{MaxInFlight: bound})
	go func() {
		for i := 1; i <= n; i++ {
			s.send(`{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":"hold"}`)
		}
	}()
	seen := map[string]bool{}
	for range n {
		<-g.started
		g.tokens <- struct{}{}
		m := s.next()
		if m.Error != nil || string(m.Result) != `"held"` {
			t.Fatalf("want every request served, got %+v", m)
		}
		seen[string(m.ID)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct answers, want %d", len(seen), n)
	}
	g.mu.Lock()
	most := g.most
	g.mu.Unlock()
	if most > bound {
		t.Fatalf("%d requests ran at once, bound %d", most, bound)
	}
	if rest := s.finish(); len(rest) != 0 {
		t.Fatalf("unexpected answers: %+v", rest)
	}
}

// collect is a Sink that keeps the errors it is answered with.
type collect struct {
	mu   sync.Mutex
	errs []*Error
}

func (c *collect) Send([]byte) error { return nil }
func (c *collect) Reply(_ []byte, e *Error) error {
	c.mu.Lock()
	c.errs = append(c.errs, e)
	c.mu.Unlock()
	return nil
}

// TestSharedLimitRefuses: connections sharing a Limit without Wait (the
// HTTP server's) refuse a request past the bound with CodeOverloaded at
// once, whichever connection it came on, and serve again once a slot is
// free.
func TestSharedLimitRefuses(t *testing.T) {
	t.Parallel()
	g := &gate{started: make(chan struct{}, 4), tokens: make(chan struct{})}
	l := NewLimit(2)
	a, b := NewConn(g, ConnOptions{Limit: l}), NewConn(g, ConnOptions{Limit: l})
	defer a.Close()
	defer b.Close()
	hold := func(id string) *Message {
		m := "hold"
		return &Message{ID: json.RawMessage(id), Method: &m}
	}
	held := &collect{}
	a.Dispatch(hold("1"), held)
	b.Dispatch(hold("2"), held)
	<-g.started
	<-g.started
	refused := &collect{}
	a.Dispatch(hold("3"), refused)
	b.Dispatch(hold("4"), refused)
	if len(refused.errs) != 2 || refused.errs[0] == nil || refused.errs[0].Code != CodeOverloaded || refused.errs[1] == nil || refused.errs[1].Code != CodeOverloaded {
		t.Fatalf("past the shared bound: want two -32001 refusals at once, got %+v", refused.errs)
	}
	g.tokens <- struct{}{}
	g.tokens <- struct{}{}
	a.Drain()
	b.Drain()
	again := &collect{}
	c := NewConn(g, ConnOptions{Limit: l})
	defer c.Close()
	c.Dispatch(hold("5"), again)
	<-g.started
	g.tokens <- struct{}{}
	c.Drain()
	if len(again.errs) != 1 || again.errs[0] != nil {
		t.Fatalf("a freed slot serves again: %+v", again.errs)
	}
}

// early answers its request through AnswerEarly, then holds its goroutine
// until release and returns another result, which must be dropped.
type early struct{ release chan struct{} }

func (h *early) Handle(ctx context.Context, _ Peer, req Request) (any, error) {
	if req.Method != "hold" {
		return "quick", nil
	}
	if !req.CanAnswerEarly() || !req.AnswerEarly(ctx, "early", nil) {
		return nil, errors.New("a stdio request could not be answered early")
	}
	if req.AnswerEarly(ctx, "again", nil) {
		return nil, errors.New("answered early twice")
	}
	<-h.release
	return "late", nil
}

func (h *early) Notification(context.Context, Peer, string, json.RawMessage) {}

// TestAnswerEarly: a request answered early is answered once, with the
// early answer, while its handler still holds its goroutine; its slot is
// free then (with a bound of 1 the next request is served), and the
// handler's own return is dropped.
func TestAnswerEarly(t *testing.T) {
	t.Parallel()
	h := &early{release: make(chan struct{})}
	s := startSession(t, h, Options{MaxInFlight: 1})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"hold"}`)
	if m := s.next(); string(m.ID) != "1" || string(m.Result) != `"early"` {
		t.Fatalf("first answer %+v; want the early one", m)
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"quick"}`)
	if m := s.next(); string(m.ID) != "2" || string(m.Result) != `"quick"` {
		t.Fatalf("second answer %+v", m)
	}
	close(h.release)
	if rest := s.finish(); len(rest) != 0 {
		t.Fatalf("more answers after the early one: %+v", rest)
	}
}
