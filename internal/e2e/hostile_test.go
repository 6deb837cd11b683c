package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// serveCmd starts the test build on pipes.
func serveCmd(t *testing.T, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *bytes.Buffer) {
	t.Helper()
	return serveIn(t, t.TempDir(), args...)
}

// serveIn is serveCmd on the project directory project.
func serveIn(t *testing.T, project string, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "--agent", "coder", "--agents", agentsFile(t), "--project-dir", project}, args...)...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, stdout, &stderr
}

// jsonrpcLines fails on any stdout line that is not a JSON-RPC 2.0 message
// and returns the ids answered.
func jsonrpcLines(t *testing.T, out []byte) map[string]int {
	t.Helper()
	ids := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("non JSON-RPC on stdout: %.200q", sc.Text())
		}
		ids[string(m.ID)]++
	}
	return ids
}

// TestHostileInput: garbage of every kind on stdin, each followed by a good
// line; every good line is answered, stdout carries JSON-RPC only, exit 0.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	cmd, stdin, stdout, stderr := serveCmd(t)
	good := func(i int) string {
		return `{"jsonrpc":"2.0","id":"good-` + strconv.Itoa(i) + `","method":"ping"}` + "\n"
	}
	hostile := []string{
		strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
		`{"jsonrpc":"2.0","id":5,"method":"ping","params":` + strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000) + "}",
		`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("a", 20<<20) + `"}}`,
		string([]byte{0, 1, 2, 0xff, 0xfe, 0x80, '{', '"'}),
		"{\"jsonrpc\":\"2.0\",\"id\":\"utf8\",\"method\":\"tools/call\",\"params\":{\"name\":\"debug_echo\",\"arguments\":{\"text\":\"\xff\xfe\xc3\"}}}",
		strings.Repeat("\r\n", 10000),
		`{"jsonrpc":"2.0","id":"crlf","method":"ping"}` + "\r",
		`Content-Length: 40`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"debug_sleep","arguments":{"ms":60000}}}`,
	}
	go func() {
		for i, h := range hostile {
			_, _ = io.WriteString(stdin, h+"\n"+good(i))
		}
		_ = stdin.Close()
	}()
	out, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	ids := jsonrpcLines(t, out)
	for i := range hostile {
		if ids[`"good-`+strconv.Itoa(i)+`"`] != 1 {
			t.Errorf("the good line after hostile input %d was not answered once: %v", i, ids)
		}
	}
}

// TestStdinClosedWithCallsInFlight: 100 calls in flight when stdin closes
// are all answered, then the process exits 0.
func TestStdinClosedWithCallsInFlight(t *testing.T) {
	t.Parallel()
	cmd, stdin, stdout, stderr := serveCmd(t)
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"debug_sleep","arguments":{"ms":300}}}`+"\n", i)
	}
	go func() { _, _ = io.WriteString(stdin, in.String()); _ = stdin.Close() }()
	out, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	ids := jsonrpcLines(t, out)
	if len(ids) != 100 || !bytes.Contains(out, []byte(`"ok":true`)) || bytes.Contains(out, []byte(`"error"`)) {
		t.Fatalf("want 100 successful answers, got %d ids:\n%.2000s", len(ids), out)
	}
}

// TestStdoutClosedEnds: when the client closes its end of stdout the server
// ends rather than serving on into a pipe nobody reads, though stdin stays
// open (without that the loop below never ends). serve ignores SIGPIPE, so
// it ends by draining and closing its session — a normal exit that stops the
// units it started — not by dying from the signal.
func TestStdoutClosedEnds(t *testing.T) {
	t.Parallel()
	cmd, stdin, stdout, _ := serveCmd(t)
	defer stdin.Close()
	_ = stdout.Close()
	for i := 0; ; i++ {
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
		if _, err := io.WriteString(stdin, line); err != nil {
			break // the server is gone: its stdin is closed
		}
	}
	_ = cmd.Wait()
	if !cmd.ProcessState.Exited() {
		t.Fatalf("the server did not exit normally: %v", cmd.ProcessState)
	}
}

// TestLSPResync: after a frame with no Content-Length the binary answers
// -32700 and still serves the next well-framed message.
func TestLSPResync(t *testing.T) {
	t.Parallel()
	cmd, stdin, stdout, stderr := serveCmd(t, "--framing", "lsp")
	frame := func(s string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(s), s) }
	go func() {
		_, _ = io.WriteString(stdin, "Content-Type: x\r\n\r\n"+`{"jsonrpc":"2.0","id":1,"method":"ping"}`+
			frame(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
		_ = stdin.Close()
	}()
	out, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if !bytes.Contains(out, []byte(`"code":-32700`)) || !bytes.Contains(out, []byte(`"id":2,"result":{}`)) {
		t.Fatalf("want -32700 then id 2 answered, got %q", out)
	}
}

// TestHungToolAnsweredAtItsTimeout: a tool that ignores its context and
// blocks far past its deadline (debug_hang: 200 ms timeout, blocks 20 s)
// holds the goroutine its call runs on, yet the call is answered as timed
// out while the tool still blocks, a call sent after it is answered, and
// the session ends when stdin closes with one timeout row in the trail.
// It fails, answering ok:true after 20 s, if nothing answers the call
// until its tool returns.
func TestHungToolAnsweredAtItsTimeout(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	cmd, stdin, stdout, stderr := serveIn(t, project)
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"debug_hang","arguments":{"ms":20000}}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"debug_echo","arguments":{"text":"after"}}}`+"\n")
	r := bufio.NewReader(stdout)
	got := map[string]string{}
	for len(got) < 2 {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("answers %v, then %v\n%s", got, err, stderr.String())
		}
		var m struct{ ID json.RawMessage }
		_ = json.Unmarshal(line, &m)
		got[string(m.ID)] = string(line)
	}
	if a := got["1"]; !strings.Contains(a, `"isError":true`) || !strings.Contains(a, "debug_hang timed out after 200 ms") {
		t.Errorf("the hung call was answered %s; want a timeout after 200 ms", a)
	}
	if a := got["2"]; !strings.Contains(a, `\"text\":\"after\"`) {
		t.Errorf("the call after the hung one was answered %s", a)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	var hung []map[string]any
	for _, row := range auditRows(t, project) {
		if row["tool"] == "debug_hang" {
			hung = append(hung, row)
		}
	}
	if len(hung) != 1 || hung[0]["status"] != "timeout" {
		t.Errorf("audit rows of the hung call: %v; want one timeout row", hung)
	}
}
