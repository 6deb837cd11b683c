package testutil

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is the real binary running as a server for one test (serve
// --http, dashboard, demo --dashboard): in its own process group, every
// line it prints kept, the URL it announced, and stopped (SIGTERM, then
// SIGKILL of its group) when the test ends. It is the one way tests start
// a server from the binary.
type Process struct {
	// URL is what the process announced (an MCP endpoint, a dashboard).
	URL string
	Cmd *exec.Cmd

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced on each line and at exit
	exited  chan struct{}
	err     error
}

// Start runs bin with args (env nil: the test's environment) and waits
// until found recognises the URL in a line of its stdout or stderr.
func Start(t testing.TB, bin string, args, env []string, found func(line string) (url string, ok bool)) *Process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Process{Cmd: cmd, changed: make(chan struct{}), exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		readers.Go(func() {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			for sc.Scan() {
				p.add(sc.Text())
			}
		})
	}
	go func() {
		readers.Wait()
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		close(p.exited)
		p.notifyLocked()
		p.mu.Unlock()
	}()
	t.Cleanup(func() { p.Stop(t) })
	line, ok := p.WaitFor(60*time.Second, func(l string) bool { _, ok := found(l); return ok })
	if !ok {
		t.Fatalf("%s %s announced no URL (exited: %t, %v):\n%s", bin, strings.Join(args, " "), p.Exited(), p.err, p.Log())
	}
	p.URL, _ = found(line)
	return p
}

func (p *Process) add(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, line)
	p.notifyLocked()
}

func (p *Process) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// WaitFor waits until a line printed so far or later satisfies match, and
// returns it; false when the process exits or d passes first.
func (p *Process) WaitFor(d time.Duration, match func(line string) bool) (string, bool) {
	deadline := time.After(d)
	seen := 0
	for {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if match(p.lines[seen]) {
				l := p.lines[seen]
				p.mu.Unlock()
				return l, true
			}
		}
		changed, exited := p.changed, p.exited
		p.mu.Unlock()
		select {
		case <-exited:
			// Lines read before the exit are in; look once more.
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if seen == n {
				return "", false
			}
		case <-changed:
		case <-deadline:
			return "", false
		}
	}
}

// Log is what the process printed so far, stdout and stderr, a line each.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended; Err is then its exit error.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Err is the process's exit error, once Done is closed.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stop sends SIGTERM (the shutdown a service manager sends) and waits for
// the process to exit, returning its exit error; a process that does not
// stop within 20 s has its group killed and fails the test. Stopping an
// ended process returns its exit error.
func (p *Process) Stop(t testing.TB) error {
	t.Helper()
	if !p.Exited() {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
			t.Errorf("%s did not stop on SIGTERM\n%s", p.Cmd.Path, p.Log())
		}
	}
	return p.Err()
}

// HTTPServer is `toolhost serve --http` running for one test, with the
// bearer token every request must carry and the secrets directory
// (TOOLHOST_SECRETS_DIR) it keeps it in, the test's own unless the test
// names one.
type HTTPServer struct {
	*Process
	Token      string
	SecretsDir string
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
// may name another --http) and waits until it listens (its http_listening
// log event), reading the token from the file that event names.
func ServeHTTP(t testing.TB, bin string, args ...string) *HTTPServer {
	t.Helper()
	return ServeHTTPEnv(t, bin, nil, args...)
}

// ServeHTTPEnv is ServeHTTP with extra environment variables (NAME=value)
// besides this process's; one naming TOOLHOST_SECRETS_DIR chooses the
// secrets directory.
func ServeHTTPEnv(t testing.TB, bin string, env []string, args ...string) *HTTPServer {
	t.Helper()
	all := append([]string{"serve"}, args...)
	hasAddr := false
	for _, a := range args {
		hasAddr = hasAddr || a == "--http"
	}
	if !hasAddr {
		all = append(all, "--http", "127.0.0.1:0")
	}
	secretsDir := filepath.Join(t.TempDir(), "secrets")
	full := append(append(os.Environ(), "TOOLHOST_SECRETS_DIR="+secretsDir), env...)
	for _, kv := range env {
		if d, ok := strings.CutPrefix(kv, "TOOLHOST_SECRETS_DIR="); ok {
			secretsDir = d
		}
	}
	var tokenFile string
	p := Start(t, bin, all, full, func(line string) (string, bool) {
		var e struct {
			Event, URL string
			TokenFile  string `json:"bearer_file"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "http_listening" {
			tokenFile = e.TokenFile
			return e.URL, true
		}
		return "", false
	})
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("the server's token file: %v", err)
	}
	return &HTTPServer{Process: p, Token: strings.TrimSpace(string(b)), SecretsDir: secretsDir}
}

// DashboardURL recognises the line `toolhost dashboard` (and `demo
// --dashboard`) prints with its URL (not the lines with its sign-in codes).
func DashboardURL(line string) (string, bool) {
	u, ok := strings.CutPrefix(line, "toolhost dashboard: ")
	return u, ok && strings.HasPrefix(u, "http")
}
