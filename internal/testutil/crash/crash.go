// Package crash makes real processes fail the way units fail, for tests of
// the tools that read their stderr (collect_stderr, category_classifier):
// Node with a missing module, Node on a port already in use, Node with an
// unhandled rejection, a Go panic in a goroutine, a Python traceback. Each
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

// GoPanic builds and runs a Go program whose goroutine indexes past a
// slice: a panic with its goroutine trace.
func GoPanic(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "go.mod", "module crashy\n\ngo 1.22\n")
	write(t, dir, "main.go", `package main

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
	go func() {
		defer wg.Done()
		fmt.Println(pick([]string{"a", "b"}, len(os.Args)+2))
	}()
	wg.Wait()
}
`)
	bin := filepath.Join(dir, "crashy")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return run(t, dir, bin)
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
