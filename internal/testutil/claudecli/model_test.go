package claudecli

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sse reads an event stream into (event name, data) pairs.
func sse(t *testing.T, r io.Reader) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, name)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("data line %q: %v", d, err)
			}
			data = append(data, m)
		}
	}
	return names, data
}

var tools = []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}

// TestStream checks the SSE stream event by event and that the tool input,
// reassembled from its input_json_delta chunks, is the scripted input.
func TestStream(t *testing.T) {
	t.Parallel()
	input := map[string]any{"command": "echo ünïcödé ✓ {\"a\":1}"}
	m := NewModel(t, Turn{Text: "running", ToolUses: []ToolUse{{Name: "Bash", Input: input}}})
	resp := post(t, m.URL+"/v1/messages?beta=true", map[string]any{"model": "claude-opus-5-5", "stream": true, "tools": tools,
		"messages": []any{map[string]any{"role": "user", "content": "go"}}})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	names, data := sse(t, resp.Body)
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	for i, d := range data {
		if d["type"] != names[i] {
			t.Errorf("event %d is %s but its data says %v", i, names[i], d["type"])
		}
	}
	if tu := data[5]["content_block"].(map[string]any); tu["type"] != "tool_use" || tu["name"] != "Bash" || !strings.HasPrefix(tu["id"].(string), "toolu_") {
		t.Errorf("tool_use start = %v", tu)
	}
	var partial string
	for _, d := range data[6:8] {
		partial += d["delta"].(map[string]any)["partial_json"].(string)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(partial), &got); err != nil || got["command"] != input["command"] {
		t.Errorf("reassembled input %q: %v", partial, err)
	}
	if stop := data[9]["delta"].(map[string]any)["stop_reason"]; stop != "tool_use" {
		t.Errorf("stop_reason %v, want tool_use", stop)
	}
}

// TestTurnsAndSideRequests: main requests consume the turns in order and
// then get DoneText; side requests consume none; tool results are read
// back with their tool names; non-streaming requests get one JSON message.
func TestTurnsAndSideRequests(t *testing.T) {
	t.Parallel()
	m := NewModel(t, Turn{ToolUses: []ToolUse{{ID: "toolu_a", Name: "Bash", Input: map[string]any{"command": "true"}}}})
	side := post(t, m.URL+"/v1/messages", map[string]any{"model": "claude-haiku-4-5", "messages": []any{map[string]any{"role": "user", "content": "title?"}}})
	var sideMsg map[string]any
	_ = json.NewDecoder(side.Body).Decode(&sideMsg)
	if c := sideMsg["content"].([]any)[0].(map[string]any); c["text"] != SideText {
		t.Errorf("side answer %v", sideMsg)
	}
	first := post(t, m.URL+"/v1/messages", map[string]any{"model": "claude-opus-5-5", "tools": tools,
		"messages": []any{map[string]any{"role": "user", "content": "go"}}})
	var msg map[string]any
	_ = json.NewDecoder(first.Body).Decode(&msg)
	if msg["stop_reason"] != "tool_use" || msg["content"].([]any)[0].(map[string]any)["id"] != "toolu_a" {
		t.Fatalf("first turn %v", msg)
	}
	second := post(t, m.URL+"/v1/messages", map[string]any{"model": "claude-opus-5-5", "tools": tools, "messages": []any{
		map[string]any{"role": "user", "content": "go"},
		map[string]any{"role": "assistant", "content": msg["content"]},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "is_error": true,
			"content": []any{map[string]any{"type": "text", "text": "refused"}}}}},
	}})
	_ = json.NewDecoder(second.Body).Decode(&msg)
	if msg["stop_reason"] != "end_turn" || msg["content"].([]any)[0].(map[string]any)["text"] != DoneText {
		t.Fatalf("past the last turn: %v", msg)
	}
	if n, s := len(m.Requests()), len(m.SideRequests()); n != 2 || s != 1 {
		t.Fatalf("%d main and %d side requests, want 2 and 1", n, s)
	}
	if got := m.Requests()[1].ToolResults(); len(got) != 1 || got[0].ToolName != "Bash" || got[0].Text != "refused" || !got[0].IsError {
		t.Errorf("request tool results %+v", got)
	}
	if got := m.ToolResults(); len(got) != 1 || got[0].ToolUseID != "toolu_a" {
		t.Errorf("model tool results %+v", got)
	}
}

// TestEndpoints: count_tokens answers a count; anything else is a 404 in
// the API's error shape, naming this package, and is recorded.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	m := NewModel(t)
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	_ = json.NewDecoder(post(t, m.URL+"/v1/messages/count_tokens?beta=true", map[string]any{"model": "x"}).Body).Decode(&count)
	if count.InputTokens <= 0 {
		t.Errorf("count_tokens = %d", count.InputTokens)
	}
	resp := post(t, m.URL+"/v1/files", map[string]any{})
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 404 || e.Type != "error" || !strings.Contains(e.Error.Message, "claudecli") {
		t.Errorf("unknown endpoint: %d %+v", resp.StatusCode, e)
	}
	if got := m.Unknown(); len(got) != 1 || got[0] != "POST /v1/files" {
		t.Errorf("Unknown() = %v", got)
	}
}
