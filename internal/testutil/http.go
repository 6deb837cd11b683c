package testutil

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
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

// HTTPServer is `toolhost serve --http` running for one test.
type HTTPServer = Process

// ServeHTTP starts bin as `bin serve args... --http 127.0.0.1:0` (args
// may name another --http) and waits until it listens (its http_listening
// log event).
func ServeHTTP(t testing.TB, bin string, args ...string) *HTTPServer {
	t.Helper()
	all := append([]string{"serve"}, args...)
	hasAddr := false
	for _, a := range args {
		hasAddr = hasAddr || a == "--http"
	}
	if !hasAddr {
		all = append(all, "--http", "127.0.0.1:0")
	}
	return Start(t, bin, all, nil, func(line string) (string, bool) {
		var e struct{ Event, URL string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "http_listening" {
			return e.URL, true
		}
		return "", false
	})
}

// DashboardURL recognises the line `toolhost dashboard` (and `demo
// --dashboard`) prints with its URL.
func DashboardURL(line string) (string, bool) {
	return strings.CutPrefix(line, "toolhost dashboard: ")
}
