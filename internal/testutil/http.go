package testutil

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HTTPServer is `toolhost serve --http` running for one test.
type HTTPServer struct {
	// URL is the MCP endpoint (http://127.0.0.1:PORT/mcp).
	URL string
	// Token is the bearer token every request must carry; SecretsDir the
	// secrets directory (TOOLHOST_SECRETS_DIR) the server keeps it in, the
	// test's own.
	Token      string
	SecretsDir string
	Cmd        *exec.Cmd
	stderr     SyncBuffer
	exited     chan struct{}
	err        error
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

// Client is an HTTP client whose every request carries the server's
// bearer token.
func (s *HTTPServer) Client() *http.Client {
	return &http.Client{Transport: Bearer(s.Token, http.DefaultTransport)}
}

// Authorize sets the server's bearer token on r.
func (s *HTTPServer) Authorize(r *http.Request) { r.Header.Set("Authorization", "Bearer "+s.Token) }

// Bearer is a round tripper that sets "Authorization: Bearer token" on each
// request.
func Bearer(token string, base http.RoundTripper) http.RoundTripper {
	return bearer{token: token, base: base}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// ServeHTTP starts bin as `bin serve args... --http 127.0.0.1:0` (args
// may name another --http) with a secrets directory of the test's own, and
// waits until it listens; the server is stopped when the test ends.
func ServeHTTP(t testing.TB, bin string, args ...string) *HTTPServer {
	t.Helper()
	return ServeHTTPEnv(t, bin, nil, args...)
}

// ServeHTTPEnv is ServeHTTP with extra environment variables (NAME=value)
// besides this process's; one naming TOOLHOST_SECRETS_DIR chooses the
// secrets directory.
func ServeHTTPEnv(t testing.TB, bin string, env []string, args ...string) *HTTPServer {
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
	secretsDir := filepath.Join(t.TempDir(), "secrets")
	cmd.Env = append(append(os.Environ(), "TOOLHOST_SECRETS_DIR="+secretsDir), env...)
	for _, kv := range env {
		if d, ok := strings.CutPrefix(kv, "TOOLHOST_SECRETS_DIR="); ok {
			secretsDir = d
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &HTTPServer{Cmd: cmd, exited: make(chan struct{}), SecretsDir: secretsDir}
	type listening struct{ url, tokenFile string }
	urlCh := make(chan listening, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			fmt.Fprintln(&s.stderr, sc.Text())
			var e struct {
				Event, URL string
				TokenFile  string `json:"bearer_file"`
			}
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "http_listening" {
				urlCh <- listening{e.URL, e.TokenFile}
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
		s.URL = u.url
		b, err := os.ReadFile(u.tokenFile)
		if err != nil {
			t.Fatalf("the server's token file: %v", err)
		}
		s.Token = strings.TrimSpace(string(b))
	case <-time.After(30 * time.Second):
		t.Fatalf("no http_listening event\n%s", s.Log())
	}
	return s
}
