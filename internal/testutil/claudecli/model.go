package claudecli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Turn is what the model answers to one request of the main conversation.
type Turn struct {
	Text     string    // an assistant text block before the tool uses (none when empty)
	ToolUses []ToolUse // tool_use blocks; the CLI runs them and sends tool_result back
}

// ToolUse is one tool_use block of a Turn.
type ToolUse struct {
	Name  string // as the CLI names the tool: "Bash", "Write", "mcp__toolhost__timeline_append"
	Input any    // marshalled as the tool_use input
	ID    string // the tool_use id; "toolu_claudecli_N" when empty
}

// Request is one /v1/messages request the CLI sent, decoded.
type Request struct {
	// Turn is the request's index in the main conversation (0 for the
	// first), or -1 for a side request.
	Turn     int
	Path     string // with the query, e.g. "/v1/messages?beta=true"
	Header   http.Header
	Model    string
	System   json.RawMessage // a string or an array of text blocks
	Messages []Message
	Tools    []json.RawMessage // the tool definitions offered to the model
	Stream   bool
	Body     json.RawMessage // the whole request body
}

// Message is one message of a request.
type Message struct {
	Role    string
	Content []Block // a plain-string content is one text block
}

// Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`        // text
	ID        string          `json:"id,omitempty"`          // tool_use
	Name      string          `json:"name,omitempty"`        // tool_use
	Input     json.RawMessage `json:"input,omitempty"`       // tool_use
	ToolUseID string          `json:"tool_use_id,omitempty"` // tool_result
	Content   json.RawMessage `json:"content,omitempty"`     // tool_result: a string or blocks
	IsError   bool            `json:"is_error,omitempty"`    // tool_result
}

// ToolResult is one tool_result block the CLI sent back, with the tool_use
// it answers.
type ToolResult struct {
	ToolUseID string
	ToolName  string          // from the matching tool_use ("" when it is not in the request)
	Input     json.RawMessage // that tool_use's input
	Text      string          // the result's text (text blocks joined by newlines)
	IsError   bool
}

// UnmarshalJSON accepts both content forms of the Messages API.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []Block{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// ToolNames returns the names of the tools the request offers.
func (r Request) ToolNames() []string {
	names := make([]string, 0, len(r.Tools))
	for _, raw := range r.Tools {
		var d struct{ Name string }
		_ = json.Unmarshal(raw, &d)
		names = append(names, d.Name)
	}
	return names
}

// SystemText returns the system prompt as one string.
func (r Request) SystemText() string {
	var s string
	if json.Unmarshal(r.System, &s) == nil {
		return s
	}
	var blocks []Block
	_ = json.Unmarshal(r.System, &blocks)
	return blockText(blocks)
}

// ToolResults returns the tool_result blocks of the request's last message:
// what the CLI sends back for the previous turn's tool uses.
func (r Request) ToolResults() []ToolResult {
	if len(r.Messages) == 0 {
		return nil
	}
	return r.results(r.Messages[len(r.Messages)-1:])
}

func (r Request) results(msgs []Message) []ToolResult {
	uses := map[string]Block{}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				uses[b.ID] = b
			}
		}
	}
	var out []ToolResult
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type != "tool_result" {
				continue
			}
			u := uses[b.ToolUseID]
			out = append(out, ToolResult{ToolUseID: b.ToolUseID, ToolName: u.Name, Input: u.Input, Text: contentText(b.Content), IsError: b.IsError})
		}
	}
	return out
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []Block
	_ = json.Unmarshal(raw, &blocks)
	return blockText(blocks)
}

func blockText(blocks []Block) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Model is a scripted Anthropic Messages API served on 127.0.0.1 for the
// test's lifetime. Point the CLI at URL (Run does).
type Model struct {
	URL string

	next   func(Request) Turn
	turnMu sync.Mutex // held while next runs

	mu      sync.Mutex
	main    []Request
	side    []Request
	unknown []string
	lastID  int
}

// DoneText is the answer to a main-conversation request past the last
// scripted turn (NewModel), and SideText the answer to every side request.
const (
	DoneText = "done"
	SideText = "claudecli side answer"
)

// NewModel serves turns in order, one per main-conversation request; a
// request after the last turn gets DoneText with stop_reason end_turn.
func NewModel(t testing.TB, turns ...Turn) *Model {
	return NewScriptedModel(t, func(r Request) Turn {
		if r.Turn < len(turns) {
			return turns[r.Turn]
		}
		return Turn{Text: DoneText}
	})
}

// NewScriptedModel answers each main-conversation request with next(req),
// so a test can react to what the CLI sent (e.g. a tool_result). next runs
// on the server's goroutine: it may call t.Error but not t.Fatal.
func NewScriptedModel(t testing.TB, next func(req Request) Turn) *Model {
	t.Helper()
	m := &Model{next: next}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	m.URL = srv.URL
	t.Cleanup(func() {
		srv.Close()
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, u := range m.unknown {
			t.Logf("claudecli: the CLI called an endpoint the model does not serve: %s", u)
		}
	})
	return m
}

// Requests returns the main-conversation requests in order.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.main...)
}

// SideRequests returns the requests answered without consuming a turn.
func (m *Model) SideRequests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.side...)
}

// Unknown returns "METHOD PATH" of every request to an endpoint the model
// does not serve (answered 404 with an error naming this package).
func (m *Model) Unknown() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.unknown...)
}

// ToolResults returns every tool_result the CLI sent in the main
// conversation, in order, each once (every request repeats the history).
func (m *Model) ToolResults() []ToolResult {
	reqs := m.Requests()
	seen := map[string]bool{}
	var out []ToolResult
	for _, r := range reqs {
		for _, tr := range r.results(r.Messages) {
			if !seen[tr.ToolUseID] {
				seen[tr.ToolUseID] = true
				out = append(out, tr)
			}
		}
	}
	return out
}

// ToolResult returns the result the CLI sent for tool_use id, failing the
// test when there is none.
func (m *Model) ToolResult(t testing.TB, id string) ToolResult {
	t.Helper()
	for _, tr := range m.ToolResults() {
		if tr.ToolUseID == id {
			return tr
		}
	}
	t.Fatalf("claudecli: the CLI sent no tool_result for %s (results: %+v)", id, m.ToolResults())
	return ToolResult{}
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		m.messages(w, r, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		// A rough count is enough: the CLI uses it to decide on compaction.
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(body)/4 + 1})
	default:
		what := r.Method + " " + r.URL.RequestURI()
		m.mu.Lock()
		m.unknown = append(m.unknown, what)
		m.mu.Unlock()
		apiError(w, http.StatusNotFound, "not_found_error", "claudecli: "+what+" is not served by the scripted model (internal/testutil/claudecli); a newer Claude CLI calls it: add it there")
	}
}

func (m *Model) messages(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		Model    string            `json:"model"`
		System   json.RawMessage   `json:"system"`
		Messages []Message         `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
		Stream   bool              `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "claudecli: request body does not decode: "+err.Error())
		return
	}
	req := Request{Turn: -1, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Model: in.Model, System: in.System,
		Messages: in.Messages, Tools: in.Tools, Stream: in.Stream, Body: append(json.RawMessage(nil), body...)}
	var turn Turn
	if isSide(req) {
		m.mu.Lock()
		m.side = append(m.side, req)
		m.mu.Unlock()
		turn = Turn{Text: SideText}
	} else {
		// One main request at a time, so the script sees the turns in
		// order; m.mu is not held while it runs, so the test can read the
		// requests meanwhile.
		m.turnMu.Lock()
		m.mu.Lock()
		req.Turn = len(m.main)
		m.main = append(m.main, req)
		m.mu.Unlock()
		turn = m.next(req)
		m.turnMu.Unlock()
	}
	blocks := m.blocks(turn)
	stop := "end_turn"
	if len(turn.ToolUses) > 0 {
		stop = "tool_use"
	}
	if in.Stream {
		writeStream(w, req.Model, blocks, stop, len(body)/4+1)
		return
	}
	writeJSON(w, http.StatusOK, message(req.Model, blocks, stop, len(body)/4+1))
}

// isSide tells the CLI's own requests (title and summary generation, quota
// and topic checks) from the main conversation: those go to the small
// (haiku) model or offer no tools, while every main-loop request offers the
// CLI's tools.
func isSide(r Request) bool {
	return len(r.Tools) == 0 || strings.Contains(strings.ToLower(r.Model), "haiku")
}

func (m *Model) blocks(turn Turn) []map[string]any {
	var blocks []map[string]any
	if turn.Text != "" || len(turn.ToolUses) == 0 {
		text := turn.Text
		if text == "" {
			text = DoneText
		}
		blocks = append(blocks, map[string]any{"type": "text", "text": text})
	}
	for _, u := range turn.ToolUses {
		id := u.ID
		if id == "" {
			m.mu.Lock()
			m.lastID++
			id = fmt.Sprintf("toolu_claudecli_%d", m.lastID)
			m.mu.Unlock()
		}
		input, err := json.Marshal(u.Input)
		if err != nil || u.Input == nil {
			input = []byte("{}")
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": u.Name, "input": json.RawMessage(input)})
	}
	return blocks
}

func message(model string, blocks []map[string]any, stop string, inTokens int) map[string]any {
	return map[string]any{
		"id": "msg_claudecli", "type": "message", "role": "assistant", "model": model,
		"content": blocks, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": inTokens, "output_tokens": 1},
	}
}

// writeStream writes the answer as the Messages API's SSE stream. A tool's
// input goes as two input_json_delta chunks, as the real API splits it.
func writeStream(w http.ResponseWriter, model string, blocks []map[string]any, stop string, inTokens int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		flush()
	}
	start := message(model, []map[string]any{}, "", inTokens)
	start["stop_reason"] = nil
	event("message_start", map[string]any{"type": "message_start", "message": start})
	event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			input := string(b["input"].(json.RawMessage))
			half := len(input) / 2
			for half > 0 && !utf8.RuneStart(input[half]) {
				half--
			}
			for _, part := range []string{input[:half], input[half:]} {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func apiError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
