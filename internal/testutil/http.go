package testutil

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// HTTPServer is `toolhost serve --http` running for one test.
type HTTPServer struct {
	// URL is the MCP endpoint (http://127.0.0.1:PORT/mcp).
	URL    string
	Cmd    *exec.Cmd
	stderr SyncBuffer
	exited chan struct{}
	err    error
}

// Log is what the server wrote to stderr so far.
func (s *HTTPServer) Log() string { return s.stderr.String() }

// Stop sends SIGTERM (the shutdown a service manager sends) and waits for
// the server to exit, returning its exit error.
func (s *HTTPServer) Stop(t testing.TB) error {
	t.Helper()
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-s.Cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		t.Errorf("toolhost --http did not stop on SIGTERM\n%s", s.Log())
	}
	return s.err
}

// ServeHTTP starts bin as `bin serve args... --http 127.0.0.1:0` (args
// may name another --http) and waits until it listens; the server is
// stopped when the test ends.
func ServeHTTP(t testing.TB, bin string, args ...string) *HTTPServer {
	t.Helper()
	hasAddr := false
	for _, a := range args {
		if a == "--http" {
			hasAddr = true
		}
	}
	all := append([]string{"serve"}, args...)
	if !hasAddr {
		all = append(all, "--http", "127.0.0.1:0")
	}
	cmd := exec.Command(bin, all...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &HTTPServer{Cmd: cmd, exited: make(chan struct{})}
	urlCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			fmt.Fprintln(&s.stderr, sc.Text())
			var e struct{ Event, URL string }
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "http_listening" {
				urlCh <- e.URL
			}
		}
		close(urlCh)
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.Stop(t)
		}
	})
	select {
	case u, ok := <-urlCh:
		if !ok {
			<-s.exited
			t.Fatalf("toolhost exited before listening: %v\n%s", s.err, s.Log())
		}
		s.URL = u
	case <-time.After(30 * time.Second):
		t.Fatalf("no http_listening event\n%s", s.Log())
	}
	return s
}
