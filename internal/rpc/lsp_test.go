package rpc

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// lspOut splits Content-Length framed output into messages.
func lspOut(t *testing.T, out string) []wireMsg {
	t.Helper()
	r := bufio.NewReader(strings.NewReader(out))
	var msgs []wireMsg
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			return msgs
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Content-Length:")))
		if err != nil {
			t.Fatalf("bad output header %q", line)
		}
		if blank, _ := r.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("no blank line after header: %q", blank)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, decodeLines(t, string(body))...)
	}
}

const lspPing = `{"jsonrpc":"2.0","id":"next","method":"echo"}`

func TestLSPFraming(t *testing.T) {
	t.Parallel()
	in := frame(`{"jsonrpc":"2.0","id":1,"method":"echo"}`) +
		"content-length: 40\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + `{"jsonrpc":"2.0","id":2,"method":"echo"}` +
		"\r\n\r\n" + frame(`{"jsonrpc":"2.0","id":3,"method":"echo"}`)
	msgs := byID(lspOut(t, serve(t, in, newHandler(), Options{LSP: true})))
	for _, id := range []string{"1", "2", "3"} {
		if _, ok := msgs[id]; !ok {
			t.Errorf("id %s not answered: %+v", id, msgs)
		}
	}
}

func TestLSPTruncatedBodyEndsSession(t *testing.T) {
	t.Parallel()
	in := "Content-Length: 1000\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"echo"}`
	if out := serve(t, in, newHandler(), Options{LSP: true}); out != "" {
		t.Fatalf("a truncated body was answered: %q", out)
	}
	if out := serve(t, "Content-Length: 40\r\n", newHandler(), Options{LSP: true}); out != "" {
		t.Fatalf("a header without body was answered: %q", out)
	}
}

func TestLSPOversizedBody(t *testing.T) {
	t.Parallel()
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":"` + strings.Repeat("a", 5000) + `"}`
	msgs := lspOut(t, serve(t, frame(body)+frame(lspPing), newHandler(), Options{LSP: true, MaxMessage: 1000}))
	if len(msgs) != 2 || msgs[0].Error == nil || msgs[0].Error.Code != CodeInvalidRequest || string(msgs[1].ID) != `"next"` {
		t.Fatalf("want a size error then the next frame answered, got %+v", msgs)
	}
}

// TestLSPBadHeaders: a frame whose headers are unusable is answered with
// -32700 and the next well-framed message is still served.
func TestLSPBadHeaders(t *testing.T) {
	t.Parallel()
	body := `{"jsonrpc":"2.0","id":1,"method":"echo"}`
	cases := map[string]string{
		"missing":   "Content-Type: x\r\n\r\n" + body,
		"bad":       "Content-Length: abc\r\n\r\n" + body,
		"negative":  "Content-Length: -5\r\n\r\n" + body,
		"overflow":  "Content-Length: 99999999999999999999999\r\n\r\n" + body,
		"no colon":  "garbage\r\n\r\n" + body,
		"long body": "Content-Type: x\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"echo","params":"` + strings.Repeat("a", 100<<10) + `"}`,
	}
	for name, bad := range cases {
		msgs := lspOut(t, serve(t, bad+frame(lspPing), newHandler(), Options{LSP: true}))
		if len(msgs) < 2 || msgs[0].Error == nil || msgs[0].Error.Code != CodeParseError {
			t.Errorf("%s: want -32700 first, got %+v", name, msgs)
			continue
		}
		if last := msgs[len(msgs)-1]; string(last.ID) != `"next"` || last.Error != nil {
			t.Errorf("%s: the next frame was not served: %+v", name, msgs)
		}
	}
}

// TestLSPLongHeaderLine: a header line is bounded; the error about it does
// not echo it back whole.
func TestLSPLongHeaderLine(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("a", 1<<20) + "\r\n\r\n" + frame(lspPing)
	out := serve(t, in, newHandler(), Options{LSP: true, MaxMessage: 1 << 10})
	msgs := lspOut(t, out)
	if len(msgs) < 2 || msgs[0].Error == nil || msgs[0].Error.Code != CodeParseError {
		t.Fatalf("want -32700 first, got %+v", msgs)
	}
	if len(out) > 4<<10 {
		t.Fatalf("the answer echoes the header line: %d bytes of output", len(out))
	}
	if last := msgs[len(msgs)-1]; string(last.ID) != `"next"` {
		t.Fatalf("the next frame was not served: %+v", msgs)
	}
}
