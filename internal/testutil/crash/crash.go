// Package crash makes real processes fail the way units fail, for tests of
// the tools that read their stderr (collect_stderr, category_classifier):
// Node with a missing module, on a port already in use, with an unhandled
// rejection or out of heap; a Go panic in a goroutine, concurrent map
// writes, a net/http handler's panic; a Python traceback, one repeated by a
// server, a chained one; a Rust panic; a process the shell saw killed. Each
// runs the real runtime and returns what it wrote to stderr.
//
// It is imported by tests only.
package crash

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// run runs argv in dir and returns its stderr; the process must fail.
func run(t testing.TB, dir string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_OPTIONS=", "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("%v exited 0; it was meant to crash (state %v)\nstdout:\n%s\nstderr:\n%s", argv, cmd.ProcessState, stdout.String(), stderr.String())
	}
	return stderr.String()
}

func node(t testing.TB) string {
	t.Helper()
	return testutil.NeedTool(t, "node", "", "apt-get install nodejs")
}

func write(t testing.TB, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// NodeMissingModule is `node server.js` requiring a package that is not
// installed: MODULE_NOT_FOUND with its Require stack.
func NodeMissingModule(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "db.js", "module.exports = require('pg-pool-missing');\n")
	p := write(t, dir, "server.js", "const db = require('./db');\nconsole.log(db);\n")
	return run(t, dir, node(t), p)
}

// NodeAddrInUse is a Node server started on a port that another listener
// holds: EADDRINUSE. It returns the stderr and the port.
func NodeAddrInUse(t testing.TB) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	p := write(t, dir, "server.js", "const http = require('http');\nconst port = Number(process.argv[2]);\n"+
		"http.createServer((req, res) => res.end('ok')).listen(port, '127.0.0.1', () => console.log('listening on', port));\n")
	return run(t, dir, node(t), p, strconv.Itoa(port)), port
}

// NodeUnhandledRejection is a promise rejected with a non-Error reason and
// never handled: Node 20 ends the process with ERR_UNHANDLED_REJECTION.
func NodeUnhandledRejection(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	p := write(t, dir, "worker.js", "async function flush() {\n  return Promise.reject('disk quota exceeded');\n}\nflush();\n")
	return run(t, dir, node(t), p)
}

// goProgram builds and runs a Go program (its main.go) that must fail,
// and returns its stderr.
func goProgram(t testing.TB, src string) string {
	t.Helper()
	goBin := testutil.NeedTool(t, "go", "", "install Go")
	dir := t.TempDir()
	write(t, dir, "go.mod", "module crashy\n\ngo 1.22\n")
	write(t, dir, "main.go", src)
	bin := filepath.Join(dir, "crashy")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return run(t, dir, bin)
}

// GoPanic builds and runs a Go program whose goroutine indexes past a
// slice: a panic with its goroutine trace.
func GoPanic(t testing.TB) string {
	t.Helper()
	return goProgram(t, `package main

import (
	"fmt"
	"os"
	"sync"
)

func pick(items []string, i int) string { return items[i] }

func main() {
	fmt.Fprintln(os.Stderr, "starting worker")
	var wg sync.WaitGroup
	wg.Add(1)
	// Done only after the call: a deferred Done would run while the
	// goroutine panics and let main return, exit 0, before the runtime
	// prints the panic.
	go func() {
		fmt.Println(pick([]string{"a", "b"}, len(os.Args)+2))
		wg.Done()
	}()
	wg.Wait()
}
`)
}

// GoConcurrentMapWrites is a Go program whose two goroutines write one map
// until the runtime notices: "fatal error: concurrent map writes", whose
// trace names the writing line (main.go:17) below the runtime's frame.
func GoConcurrentMapWrites(t testing.TB) string {
	t.Helper()
	return goProgram(t, `package main

import "sync"

func main() {
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go count(counts, &wg)
	}
	wg.Wait()
}

func count(counts map[int]int, wg *sync.WaitGroup) {
	for i := 0; ; i++ {
		counts[i%64]++
	}
}
`)
}

// GoHTTPHandlerPanic is a net/http server whose handler dereferences a nil
// pointer, asked the same route n times by the program itself before it
// exits 1: net/http recovers each panic and logs "http: panic serving
// <client>: …" with the goroutine trace, once per request. The handler's
// line is main.go:15.
func GoHTTPHandlerPanic(t testing.TB, n int) string {
	t.Helper()
	return goProgram(t, `package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

type order struct{ Items []string }

func show(w http.ResponseWriter, r *http.Request) {
	var o *order
	fmt.Fprintln(w, len(o.Items))
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(l, http.HandlerFunc(show))
	for range `+strconv.Itoa(n)+` {
		if resp, err := http.Get("http://" + l.Addr().String() + "/orders/7"); err == nil {
			resp.Body.Close()
		}
	}
	os.Exit(1)
}
`)
}

// PythonTraceback runs a Python script that raises: a traceback whose last
// line names the exception.
func PythonTraceback(t testing.TB) string {
	t.Helper()
	py := testutil.NeedTool(t, "python3", "", "apt-get install python3")
	dir := t.TempDir()
	p := write(t, dir, "app.py", "def port(v):\n    return int(v)\n\nprint(port('eighty'))\n")
	return run(t, dir, py, p)
}

// PythonServerTracebacks is a Python http.server whose handler divides by
// zero, asked n times by the script itself before it exits 1: socketserver
// prints the same traceback once per request, between dashed lines that
// name each client's port.
func PythonServerTracebacks(t testing.TB, n int) string {
	t.Helper()
	py := testutil.NeedTool(t, "python3", "", "apt-get install python3")
	dir := t.TempDir()
	p := write(t, dir, "server.py", `import http.server, sys, threading, urllib.request

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        per_page = 0
        pages = 10 // per_page
        self.send_response(200)
        self.end_headers()

server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
for _ in range(`+strconv.Itoa(n)+`):
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/orders" % server.server_port)
    except Exception:
        pass
sys.exit(1)
`)
	return run(t, dir, py, p)
}

// PythonChainedException raises while handling another exception, from a
// KeyError through a ValueError to a NameError: three tracebacks joined by
// "The above exception was the direct cause…" and "During handling of the
// above exception…".
func PythonChainedException(t testing.TB) string {
	t.Helper()
	py := testutil.NeedTool(t, "python3", "", "apt-get install python3")
	dir := t.TempDir()
	p := write(t, dir, "config.py", `SETTINGS = {"port": "8080"}

def setting(name):
    return SETTINGS[name]

def load(name):
    try:
        return setting(name)
    except KeyError as e:
        raise ValueError("no setting " + name) from e

try:
    load("host")
except ValueError:
    print(fallback_host)
`)
	return run(t, dir, py, p)
}

// RustPanic compiles a Rust program with rustc and runs it: it indexes
// past a vector ("thread 'main' panicked at src/main.rs:4:20:" and the
// message on the next line); backtrace on or off as asked.
func RustPanic(t testing.TB, backtrace bool) string {
	t.Helper()
	rustc := testutil.NeedTool(t, "rustc", "", "bash scripts/deps/95-rustc.sh (Debian's rustc)")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "src/main.rs", `fn main() {
    let ports = vec![8080, 8081];
    let i = std::env::args().count() + 4;
    println!("{}", ports[i]);
}
`)
	bin := filepath.Join(dir, "app")
	build := exec.Command(rustc, "-g", "-o", bin, "src/main.rs")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("rustc: %v\n%s", err, out)
	}
	env := "RUST_BACKTRACE=0"
	if backtrace {
		env = "RUST_BACKTRACE=1"
	}
	return run(t, dir, "/usr/bin/env", env, bin)
}

// NodeHeapOutOfMemory runs node with a 16 MB old space and a loop that
// keeps every array it makes: V8's last GCs, "FATAL ERROR: Reached heap
// limit Allocation failed - JavaScript heap out of memory" and the native
// stack.
func NodeHeapOutOfMemory(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	p := write(t, dir, "cache.js", "const cache = [];\nfor (;;) cache.push(new Array(100000).fill(1));\n")
	return run(t, dir, node(t), "--max-old-space-size=16", p)
}

// ShellKilled is a unit started through bash whose node process is killed
// by SIGKILL (as the OOM killer does): bash reports "… Killed  node …".
func ShellKilled(t testing.TB) string {
	t.Helper()
	bash := testutil.NeedTool(t, "bash", "", "apt-get install bash")
	dir := t.TempDir()
	p := write(t, dir, "server.js", "process.kill(process.pid, 'SIGKILL');\n")
	return run(t, dir, bash, "-c", node(t)+" "+p+"; exit 137")
}
