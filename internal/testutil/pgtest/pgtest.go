// Package pgtest starts a real PostgreSQL for tests: a cluster made with
// initdb in a temp dir and run with pg_ctl on a private socket dir and a
// free loopback port, never a system service. initdb refuses to run as
// root, so as root the cluster is made and run as the `postgres` user the
// Debian package creates (runuser), in a dir made accessible to it. The
// cluster is stopped and its dir removed when the test (or the package's
// TestMain) ends, also when it failed.
//
// The binaries come from scripts/deps/90-postgresql.sh (Debian's
// postgresql, 15); when they are missing a test fails under CI=true and
// is skipped elsewhere (testutil.NeedTool).
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// install is what NeedTool tells when the binaries are missing.
const install = "bash scripts/deps/90-postgresql.sh"

// binDirs are where Debian puts the server binaries (initdb and pg_ctl
// are not on PATH there).
var binDirs = []string{"/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"}

// Cluster is one running PostgreSQL.
type Cluster struct {
	dir     string // owns data/, sock/, log
	bin     string
	port    int
	runAs   string // "" when the test process runs it itself
	mu      sync.Mutex
	stopped bool
}

// Start makes and starts a cluster for t, stopped and removed when t
// ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := start(findBin(t))
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(c.Remove)
	return c
}

func findBin(t testing.TB) string {
	for _, d := range binDirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return filepath.Dir(testutil.NeedTool(t, "initdb", "", install))
}

func start(bin string) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "toolhost-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		u, err := user.Lookup(c.runAs)
		if err != nil {
			c.Remove()
			return nil, fmt.Errorf("running as root, the cluster runs as user postgres, which does not exist (%v); %s", err, install)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			c.Remove()
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			c.Remove()
			return nil, err
		}
	}
	if out, err := c.run("initdb", "-D", c.data(), "-U", "toolhost", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		c.Remove()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := c.mkdirOwned(c.sock()); err != nil {
		c.Remove()
		return nil, err
	}
	// A free port can be taken by someone else between the probe and the
	// start: try a few.
	for range 5 {
		if c.port, err = freePort(); err != nil {
			break
		}
		if err = c.Start(); err == nil {
			return c, nil
		}
	}
	c.Remove()
	return nil, err
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) sock() string { return filepath.Join(c.dir, "sock") }

func (c *Cluster) mkdirOwned(p string) error {
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	if c.runAs == "" {
		return nil
	}
	u, err := user.Lookup(c.runAs)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(p, uid, gid)
}

// run runs a server binary, as the cluster's user.
func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	argv := append([]string{filepath.Join(c.bin, name)}, args...)
	if c.runAs != "" {
		argv = append([]string{"runuser", "-u", c.runAs, "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}

// Start starts the (stopped) server and waits until it accepts
// connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=on -c max_connections=200 -c full_page_writes=off", c.port, c.sock())
	out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-o", opts, "-w", "-t", "60", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, lastLines(string(log), 20))
	}
	c.stopped = false
	return nil
}

// How pg_ctl stop ends the server (StopMode).
const (
	// Fast ends every session (what is open is rolled back, each client is
	// told the server is shutting down) and stops cleanly.
	Fast = "fast"
	// Immediate stops at once, as a crash would: every connection drops
	// unanswered, and the next start recovers from the log.
	Immediate = "immediate"
)

// Stop stops the server at once (Immediate), as a database crash under
// load does.
func (c *Cluster) Stop() error { return c.StopMode(Immediate) }

// StopMode stops the server with pg_ctl stop -m mode (Fast or Immediate);
// Start starts it again on the same port.
func (c *Cluster) StopMode(mode string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	out, err := c.run("pg_ctl", "-D", c.data(), "-m", mode, "-w", "-t", "60", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %v\n%s", mode, err, out)
	}
	c.stopped = true
	return nil
}

// Remove stops the server and removes its dir; safe to call twice.
func (c *Cluster) Remove() {
	_ = c.Stop()
	_ = os.RemoveAll(c.dir)
}

// Port is the server's TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// URL is the address of database db (created with CreateDB) over
// loopback TCP, as a user would write it for --store.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://toolhost@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// SocketURL is the address of db over the private Unix socket.
func (c *Cluster) SocketURL(db string) string {
	return fmt.Sprintf("postgres://toolhost@/%s?host=%s&port=%d&sslmode=disable", db, c.sock(), c.port)
}

// CreateDB creates a database and returns its URL.
func (c *Cluster) CreateDB(t testing.TB, name string) string {
	t.Helper()
	if out, err := c.run("createdb", "-h", c.sock(), "-p", strconv.Itoa(c.port), "-U", "toolhost", name); err != nil {
		t.Fatalf("createdb %s: %v\n%s", name, err, out)
	}
	return c.URL(name)
}

// Log is the server's log so far (for a failing test's message).
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "log"))
	return lastLines(string(b), 40)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// shared is the cluster of a test binary (Shared), started on first use.
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
	n    int
	mu   sync.Mutex
}

// Shared returns the test binary's one cluster, started on first use,
// and a new database on it for t: tests share the server (starting one
// costs a second or more) but never a database. Call StopShared from the
// package's TestMain after m.Run so it is removed whatever the outcome.
func Shared(t testing.TB) (*Cluster, string) {
	t.Helper()
	bin := findBin(t)
	shared.once.Do(func() { shared.c, shared.err = start(bin) })
	if shared.err != nil {
		t.Fatalf("start PostgreSQL: %v", shared.err)
	}
	shared.mu.Lock()
	shared.n++
	name := fmt.Sprintf("t%d_%d", os.Getpid(), shared.n)
	shared.mu.Unlock()
	return shared.c, shared.c.CreateDB(t, name)
}

// StopShared stops and removes the shared cluster, if one was started.
func StopShared() {
	if shared.c != nil {
		shared.c.Remove()
	}
}
