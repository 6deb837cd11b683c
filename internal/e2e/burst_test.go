package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// maxBurstThreads is the most OS threads a serving process may use under
// a burst: requests in flight are bounded, and those that wait for the
// same file lock wait on a Go lock, not each in flock(2) on a thread of
// its own (a burst of 60,000 once passed Go's 10,000-thread limit).
const maxBurstThreads = 64

// threadsOf is the Threads figure of /proc/PID/status (0 once it exited).
func threadsOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// watchThreads samples pid's thread count until stop is closed and
// returns the most it saw.
func watchThreads(pid int, stop <-chan struct{}) <-chan int {
	most := make(chan int, 1)
	go func() {
		m := 0
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			m = max(m, threadsOf(pid))
			select {
			case <-stop:
				most <- m
				return
			case <-t.C:
			}
		}
	}()
	return most
}

// timelineRows counts the entries of the project's timeline, the rotated
// files (timeline.NNNNNN.ndjson) included.
func timelineRows(t *testing.T, project string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(project, "timeline*.ndjson"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no timeline: %v", err)
	}
	rows := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rows += bytes.Count(b, []byte("\n"))
	}
	return rows
}

// TestStdioBurst: a client that pipelines 100,000 timeline_append calls
// without waiting for any answer gets every one answered, once; the
// server reads no faster than it answers (so its goroutines and threads
// stay bounded), exits 0 when input ends, and the timeline holds one entry
// per ok answer.
func TestStdioBurst(t *testing.T) {
	t.Parallel()
	const n = 100_000
	project := t.TempDir()
	cmd := exec.Command(testutil.Toolhost(t), "serve", "--agent", "integrator", "--project-dir", project, "--log-level", "warn")
	cmd.Env = withoutTelemetry(os.Environ())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	most := watchThreads(cmd.Process.Pid, stop)
	go func() {
		w := bufio.NewWriterSize(stdin, 1<<16)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"burst.tick","message":"tick %d"}}}`+"\n", i, i)
		}
		_ = w.Flush()
		_ = stdin.Close()
	}()
	answered := make([]bool, n+1)
	ok, got := 0, 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		id := responseID(line)
		if id < 1 || id > n || answered[id] {
			t.Fatalf("answer with a bad or repeated id: %.300s", line)
		}
		answered[id] = true
		got++
		if bytes.Contains(line, []byte(`"structuredContent":{"ok":true`)) {
			ok++
		}
	}
	err := cmd.Wait()
	close(stop)
	if err != nil {
		t.Fatalf("serve exited with %v after %d answers\n%.4000s", err, got, stderr.String())
	}
	if got != n {
		t.Fatalf("%d of %d requests answered\n%.4000s", got, n, stderr.String())
	}
	if rows := timelineRows(t, project); rows != ok {
		t.Fatalf("%d timeline entries for %d ok answers", rows, ok)
	}
	if ok != n {
		t.Errorf("%d of %d answers ok\n%.4000s", ok, n, stderr.String())
	}
	if m := <-most; m > maxBurstThreads {
		t.Errorf("the server ran %d OS threads under the burst (bound %d)", m, maxBurstThreads)
	}
}

// TestHTTPBurst: 2,000 POSTs at once (2026-07-28 stateless tools/call of
// timeline_append) are all answered: served, or refused past the server's
// bound with 503, Retry-After and a JSON-RPC -32001 error naming the
// request's id, which the client sends again after the wait it was given.
// Every call ends served, the server's threads stay bounded, and the
// timeline holds one entry per ok answer.
func TestHTTPBurst(t *testing.T) {
	t.Parallel()
	const n = 2000
	project := t.TempDir()
	srv := testutil.ServeHTTP(t, testutil.Toolhost(t), "--agent", "integrator", "--project-dir", project)
	stop := make(chan struct{})
	most := watchThreads(srv.Cmd.Process.Pid, stop)
	hc := &http.Client{Transport: testutil.Bearer(srv.Token, &http.Transport{MaxIdleConnsPerHost: n}), Timeout: 5 * time.Minute}
	var refused, ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			<-start
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"burst.tick","message":"tick %d"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, i, i)
			for {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "timeline_append")
				resp, err := hc.Do(req)
				if err != nil {
					errs <- fmt.Errorf("POST %d: %v", i, err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					if !bytes.Contains(b, []byte(`"structuredContent":{"ok":true`)) {
						errs <- fmt.Errorf("POST %d: %.300s", i, b)
						return
					}
					ok.Add(1)
					return
				case http.StatusServiceUnavailable:
					var m struct {
						ID    int `json:"id"`
						Error struct {
							Code int `json:"code"`
						} `json:"error"`
					}
					wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
					if json.Unmarshal(b, &m) != nil || m.ID != i || m.Error.Code != -32001 || err != nil || wait < 1 {
						errs <- fmt.Errorf("POST %d refused without its id, -32001 and Retry-After (%q): %.300s", i, resp.Header.Get("Retry-After"), b)
						return
					}
					refused.Add(1)
					time.Sleep(time.Duration(wait) * time.Second)
				default:
					errs <- fmt.Errorf("POST %d: HTTP %d %.300s", i, resp.StatusCode, b)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d served, %d refusals retried", ok.Load(), refused.Load())
	if rows := timelineRows(t, project); rows != int(ok.Load()) || rows != n {
		t.Fatalf("%d timeline entries for %d ok answers of %d", rows, ok.Load(), n)
	}
	if m := <-most; m > maxBurstThreads {
		t.Errorf("the server ran %d OS threads under the burst (bound %d)", m, maxBurstThreads)
	}
	if err := srv.Stop(t); err != nil {
		t.Fatalf("the server did not exit cleanly: %v\n%.4000s", err, srv.Log())
	}
}

// postModern POSTs a 2026-07-28 stateless tools/call of tool with args
// (JSON) and id to srv, with its token, within ctx.
func postModern(ctx context.Context, srv *testutil.HTTPServer, id int, tool, args string) (int, http.Header, []byte, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, tool, args)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
	srv.Authorize(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, nil
}

// TestHTTPPastTheBound: with --max-in-flight 1 and a call holding the one
// slot (a bash command that marks a file, then sleeps), the next POST is
// refused with 503, Retry-After and the JSON-RPC -32001 error with its id;
// once the holder's client goes away (which cancels a stateless request)
// the server serves again. The holder is seen in flight by the file its
// command made, so no probe ever races it for the slot.
func TestHTTPPastTheBound(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, "units", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(project, "units", "a", "holding")
	srv := testutil.ServeHTTP(t, binary(t), "--agent", "coder", "--unit", "a", "--agents", agentsFile(t),
		"--project-dir", project, "--max-in-flight", "1")
	holdCtx, release := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() {
		args, _ := json.Marshal(map[string]any{"command": "touch '" + mark + "' && exec sleep 600", "timeout_ms": 600000})
		status, _, b, err := postModern(holdCtx, srv, 1, "bash", string(args))
		if err == nil {
			err = fmt.Errorf("the holder was answered (HTTP %d) before it was let go: %.300s", status, b)
		}
		held <- err
	}()
	for {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		select {
		case err := <-held:
			t.Fatalf("holder: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	status, h, b, err := postModern(context.Background(), srv, 2, "debug_echo", `{"text":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !bytes.Contains(b, []byte(`"id":2`)) || !bytes.Contains(b, []byte(`"code":-32001`)) {
		t.Fatalf("while a call holds the only slot: want 503 with Retry-After, its id and -32001, got HTTP %d %v %s", status, h, b)
	}
	release()
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Fatalf("holder: %v", err)
	}
	// The slot frees once the cancelled command has been killed and its
	// answer written: until then the server may still refuse.
	for id := 3; ; id++ {
		status, _, b, err := postModern(context.Background(), srv, id, "debug_echo", `{"text":"again"}`)
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusOK && bytes.Contains(b, []byte("again")) {
			break
		}
		if status != http.StatusServiceUnavailable {
			t.Fatalf("not served again after the holder went away: HTTP %d %s", status, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
