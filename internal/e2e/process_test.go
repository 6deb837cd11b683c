package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

func start(t *testing.T, bin string, args ...string) *stdioclient.Client {
	t.Helper()
	c, err := stdioclient.Start(bin, append([]string{"serve"}, args...), os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(10 * time.Second) })
	return c
}

func mustCall(t *testing.T, c *stdioclient.Client, name string, args any) *stdioclient.ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.CallTool(ctx, name, args, nil)
	if err != nil {
		t.Fatalf("%s: %v\nstderr: %s", name, err, c.Stderr())
	}
	if r.IsError {
		t.Fatalf("%s: isError: %s", name, r.Text())
	}
	return r
}

func items(n int) []map[string]any {
	var out []map[string]any
	for i := 1; i <= n; i++ {
		out = append(out, map[string]any{"id": fmt.Sprintf("step-%03d", i), "description": "step " + strconv.Itoa(i)})
	}
	return out
}

// TestProcessesShareOneProject runs several toolhost processes (one per
// agent session, as in production) against one project: timeline seq stays
// unique and increasing across them and no todolist update is lost.
func TestProcessesShareOneProject(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	const procs, perProc = 4, 25
	clients := make([]*stdioclient.Client, procs)
	for i := range clients {
		clients[i] = start(t, bin, "--agent", "coder", "--project-dir", project, "--session", fmt.Sprintf("sess-%d", i))
	}
	mustCall(t, clients[0], "write_todolist", map[string]any{"items": items(procs * perProc)})
	var wg sync.WaitGroup
	errs := make(chan error, procs*perProc*2)
	for p, c := range clients {
		wg.Add(1)
		go func(p int, c *stdioclient.Client) {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; i < perProc; i++ {
				if r, err := c.CallTool(ctx, "timeline_append", map[string]any{"kind": "test.race", "message": fmt.Sprintf("p%d-%d", p, i)}, nil); err != nil || r.IsError {
					errs <- fmt.Errorf("timeline p%d i%d: %v %v", p, i, err, r)
				}
				id := fmt.Sprintf("step-%03d", p*perProc+i+1)
				if r, err := c.CallTool(ctx, "update_todo_item", map[string]any{"id": id, "status": "done"}, nil); err != nil || r.IsError {
					errs <- fmt.Errorf("todo %s: %v %v", id, err, r)
				}
			}
		}(p, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Timeline: procs*perProc lines, seq 1..N strictly increasing in file order.
	f, err := os.ReadFile(filepath.Join(project, "timeline.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(f))
	for sc.Scan() {
		var e struct{ Seq int64 }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("timeline line %d is torn: %q", lines+1, sc.Text())
		}
		if e.Seq <= last {
			t.Fatalf("timeline seq %d after %d: not strictly increasing", e.Seq, last)
		}
		last = e.Seq
		lines++
	}
	if lines != procs*perProc {
		t.Errorf("timeline has %d lines, want %d", lines, procs*perProc)
	}
	var tl struct {
		Items       []struct{ ID, Status string }
		ProgressPct int `json:"progress_pct"`
	}
	b, _ := os.ReadFile(filepath.Join(project, "agent-state", "coder-todo.json"))
	if err := json.Unmarshal(b, &tl); err != nil {
		t.Fatal(err)
	}
	for _, it := range tl.Items {
		if it.Status != "done" {
			t.Errorf("lost update: %s is %s", it.ID, it.Status)
		}
	}
	if tl.ProgressPct != 100 {
		t.Errorf("progress_pct = %d, want 100", tl.ProgressPct)
	}
}

// TestKillDuringWrites kills toolhost with SIGKILL while it writes; once the
// next session has started, every state file parses (old or new content,
// never torn), every log line parses, and no stale temp file is left.
func TestKillDuringWrites(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	for round := 0; round < 4; round++ {
		c, err := stdioclient.Start(bin, []string{"serve", "--agent", "pm", "--project-dir", project}, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Errors are expected once the process is killed.
				_, _ = c.CallTool(ctx, "write_todolist", map[string]any{"items": items(1 + i%40)}, nil)
				_, _ = c.CallTool(ctx, "record_memory", map[string]any{"key": fmt.Sprintf("k%d", i%7), "content": strings.Repeat("memory ", 1+i%500)}, nil)
				_, _ = c.CallTool(ctx, "timeline_append", map[string]any{"kind": "crash.test", "message": "round " + strconv.Itoa(round)}, nil)
			}
		}()
		time.Sleep(time.Duration(150+round*70) * time.Millisecond)
		_ = syscall.Kill(c.Process().PID, syscall.SIGKILL)
		close(stop)
		_ = c.Close(5 * time.Second)
		<-done
	}
	// The next session removes the temp files the kills left behind once
	// they are older than a minute (backdated here), and one planted for a
	// process that no longer exists, but not a temp file of a live writer.
	planted := filepath.Join(project, "agent-state", sandbox.TempPrefix+"999999999.1-feed")
	live := filepath.Join(project, "agent-state", fmt.Sprintf("%s%d.%d-beef", sandbox.TempPrefix, os.Getpid(), selfStart(t)))
	// On a loaded machine every round may have been killed before its
	// first write made agent-state/.
	if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{planted, live} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Minute)
	temps := 0
	_ = filepath.Walk(project, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(info.Name(), sandbox.TempPrefix) {
			temps++
			return os.Chtimes(p, old, old)
		}
		return nil
	})
	// The next session also repairs the logs' tails: a kill inside a
	// write(2) that spans two pages leaves a torn line the dead writer
	// cannot cut back.
	c := start(t, bin, "--agent", "pm", "--project-dir", project)
	mustCall(t, c, "timeline_append", map[string]any{"kind": "after.crash", "message": "clean"})
	checked := 0
	err := filepath.Walk(project, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".ndjson"):
			for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
				if line != "" && !json.Valid([]byte(line)) {
					t.Errorf("%s line %d torn: %q", p, i+1, line)
				}
			}
			checked++
		case strings.HasSuffix(p, ".json"):
			if !json.Valid(b) {
				t.Errorf("%s torn: %q", p, b)
			}
			checked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 3 {
		t.Fatalf("only %d state files written; the writer did not run", checked)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		_ = filepath.Walk(project, func(p string, info os.FileInfo, err error) error {
			if err == nil && strings.HasPrefix(info.Name(), sandbox.TempPrefix) && p != live {
				left = append(left, p)
			}
			return nil
		})
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d stale temp files left: %v", len(left), temps, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the temp file of a live writer was removed: %v", err)
	}
	t.Logf("%d temp files (1 planted, 1 live) after %d kills; the stale ones removed", temps, 4)
}

// selfStart is this process's start time in clock ticks (what temp file
// names carry).
func selfStart(t *testing.T) uint64 {
	t.Helper()
	st, err := procs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return st.StartTicks
}

// TestBadLaunches: an unknown agent exits 2 naming the known ones; a project
// dir that cannot be created is a clear error, not a crash.
func TestBadLaunches(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"unknown agent", []string{"serve", "--agent", "ceo", "--project-dir", t.TempDir()}, 2, "known: devloop-architect, devloop-bug-triager"},
		{"missing agent", []string{"serve", "--project-dir", t.TempDir()}, 2, "--agent is required"},
		{"missing project", []string{"serve", "--agent", "pm"}, 2, "--project-dir is required"},
		{"project under a file", []string{"serve", "--agent", "pm", "--project-dir", filepath.Join(file, "p")}, 1, "project dir"},
		{"bad framing", []string{"serve", "--agent", "pm", "--project-dir", t.TempDir(), "--framing", "xml"}, 2, "--framing must be"},
		{"bad unit", []string{"serve", "--agent", "pm", "--project-dir", t.TempDir(), "--unit", "../x"}, 2, "--unit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), "TOOLHOST_AGENT=", "TOOLHOST_PROJECT_DIR=")
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != tc.code || !strings.Contains(string(out), tc.contains) {
				t.Errorf("exit %d, output %q; want exit %d containing %q", code, out, tc.code, tc.contains)
			}
		})
	}
}

// TestFailedCallKeepsState: a rejected or ok:false call leaves what was on
// disk untouched.
func TestFailedCallKeepsState(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	c := start(t, bin, "--agent", "pm", "--project-dir", project)
	mustCall(t, c, "write_todolist", map[string]any{"items": items(3)})
	path := filepath.Join(project, "agent-state", "pm-todo.json")
	before, _ := os.ReadFile(path)
	ctx := context.Background()
	bad := []any{
		map[string]any{"items": []map[string]any{{"id": "step-001", "description": "a", "depends_on": []string{"step-002"}}, {"id": "step-002", "description": "b", "depends_on": []string{"step-001"}}}},
		map[string]any{"items": []map[string]any{{"id": "step-001", "description": "a"}, {"id": "step-001", "description": "dup"}}},
		map[string]any{"items": "not a list"},
	}
	for i, args := range bad {
		r, err := c.CallTool(ctx, "write_todolist", args, nil)
		if err != nil {
			t.Fatal(err)
		}
		ok := strings.Contains(string(r.StructuredContent), `"ok":false`) || r.IsError
		if !ok {
			t.Errorf("bad call %d was accepted: %s", i, r.Text())
		}
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Errorf("a failed call changed the todolist:\nbefore %s\nafter %s", before, after)
	}
}

// TestSIGTERMDrains: SIGTERM lets the in-flight call finish and answer, then
// the server exits 0.
func TestSIGTERMDrains(t *testing.T) {
	t.Parallel()
	cmd, stdin, stdout, stderr := serveCmd(t)
	// Wait until the server answers, then put a slow call in flight.
	r := bufio.NewReader(stdout)
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":0,"method":"ping"}`+"\n")
	if _, err := r.ReadBytes('\n'); err != nil {
		t.Fatalf("no answer to ping: %v\n%s", err, stderr.String())
	}
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"debug_sleep","arguments":{"ms":600}}}`+"\n")
	time.Sleep(200 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	out, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(string(out), `"id":1`) || !strings.Contains(string(out), `"ok":true`) {
		t.Errorf("in-flight call was not answered before exit: %q", out)
	}
}

// TestLSPFraming: --framing lsp reads and writes Content-Length frames, and
// a malformed frame is answered without ending the session.
func TestLSPFraming(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	cmd := exec.Command(bin, "serve", "--agent", "pm", "--project-dir", t.TempDir(), "--framing", "lsp")
	frame := func(s string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(s), s) }
	cmd.Stdin = strings.NewReader(
		frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`) +
			frame(`{not json}`) +
			frame(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"lsp.test","message":"framed"}}}`))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	var bodies []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Content-Length:")))
		if err != nil {
			t.Fatalf("bad header %q in %q", line, out)
		}
		_, _ = r.ReadString('\n')
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(body))
	}
	all := strings.Join(bodies, "\n")
	if len(bodies) != 3 || !strings.Contains(all, `"code":-32700`) || !strings.Contains(all, `\"seq\":1`) {
		t.Errorf("want 3 framed messages (initialize, -32700, seq 1), got:\n%s", all)
	}
}

// TestStdioKindsAndFlags: serve reads and writes through the runtime poller
// when stdin/stdout are pipes or sockets (what os/exec and Node give it), and
// leaves those shared file descriptions blocking again when it exits, as it
// found them: the parent may hand them on. Regular files work as before.
func TestStdioKindsAndFlags(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	requests := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"parse_placeholder","arguments":{"text":"{{var:x}}","vars":{"x":7}}}}` + "\n"
	nonblocking := func(t *testing.T, f *os.File) bool {
		t.Helper()
		sc, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var flags int
		if err := sc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
			t.Fatal(err)
		}
		return flags&unix.O_NONBLOCK != 0
	}
	serve := func(t *testing.T, stdin, stdout *os.File) {
		t.Helper()
		cmd := exec.Command(bin, "serve", "--agent", "integrator", "--project-dir", t.TempDir())
		cmd.Stdin, cmd.Stdout = stdin, stdout
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("serve: %v\n%s", err, stderr.String())
		}
	}
	check := func(t *testing.T, out []byte) {
		t.Helper()
		if !bytes.Contains(out, []byte(`"id":2`)) || !bytes.Contains(out, []byte(`"text":"7"`)) {
			t.Fatalf("no answer to the call: %s", out)
		}
	}

	pipe := func(parentWrites bool) func(t *testing.T) (parent, child *os.File) {
		return func(t *testing.T) (*os.File, *os.File) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			if parentWrites {
				return w, r
			}
			return r, w
		}
	}
	socketPair := func(t *testing.T) (*os.File, *os.File) {
		// macOS has no SOCK_CLOEXEC: the flag is set under the fork lock,
		// as os/exec does, so no child started meanwhile inherits them.
		syscall.ForkLock.RLock()
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.CloseOnExec(fds[0])
			unix.CloseOnExec(fds[1])
		}
		syscall.ForkLock.RUnlock()
		if err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "child's")
	}
	for _, kind := range []struct {
		name          string
		stdin, stdout func(t *testing.T) (parent, child *os.File)
		endInput      func(parent *os.File)
	}{
		{"pipes", pipe(true), pipe(false), func(f *os.File) { _ = f.Close() }},
		{"sockets", socketPair, socketPair, func(f *os.File) { _ = unix.Shutdown(int(f.Fd()), unix.SHUT_WR) }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			inParent, inChild := kind.stdin(t)
			outParent, outChild := kind.stdout(t)
			go func() { _, _ = io.WriteString(inParent, requests); kind.endInput(inParent) }()
			got := make(chan []byte)
			go func() { b, _ := io.ReadAll(outParent); got <- b }()
			serve(t, inChild, outChild) // os/exec hands the child blocking descriptors
			if nonblocking(t, inChild) || nonblocking(t, outChild) {
				t.Fatalf("serve left the parent's %s non-blocking", kind.name)
			}
			_ = outChild.Close()
			check(t, <-got)
		})
	}

	t.Run("regular files", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		in := filepath.Join(dir, "in.ndjson")
		if err := os.WriteFile(in, []byte(requests), 0o644); err != nil {
			t.Fatal(err)
		}
		stdin, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		stdout, err := os.Create(filepath.Join(dir, "out.ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		defer stdout.Close()
		serve(t, stdin, stdout)
		out, err := os.ReadFile(stdout.Name())
		if err != nil {
			t.Fatal(err)
		}
		check(t, out)
	})
}
