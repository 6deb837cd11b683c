package confine

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/secrets"
)

// toolhost's own servers (a loopback `serve --http`, `toolhost dashboard`)
// are out of reach of every confined process, by the kernel.
//
// What the kernel offers: Landlock's TCP connect rules are an allow-list of
// ports (no address, no deny rule), and a seccomp filter cannot read a
// sockaddr. So a process may connect to "every port but these" only through
// a ruleset that grants each of the other 65,000-odd ports, and a domain
// built from it copies every rule: measured on this project's machine about
// 65-150 ms to build such a ruleset and 25-35 ms for each landlock_restrict_self
// with it (BenchmarkExcludedPorts). That is too much for every command of
// every session, so it is paid only while a server of toolhost's runs:
//
//   - each server registers its port in a per-user directory while it
//     listens (RegisterServer: one empty file named owner pid, start time
//     and port; a dead owner's entry is ignored and removed);
//   - Prepare reads the live ports. An agent whose connect rule is a list
//     loses those ports from it (free). One whose rule is "any" gets a
//     second Landlock layer granting every other port, built once per
//     process and set of ports and reused (the ruleset fd is dup'ed into
//     each plan), plus the seccomp filter that keeps MPTCP and SCTP sockets
//     from passing TCP rules;
//   - sandbox.network.reachToolhost (an agent's) lets its commands reach
//     them anyway.
//
// What remains: a process started before a server was (a long-lived unit,
// an upstream server) can reach it, since a Landlock domain is fixed when
// the process starts; the port is refused on every host, not only
// loopback; another user's toolhost is not this registry's concern (its
// bearer token is).

// EnvServersDir overrides where toolhost's servers register their ports (an
// absolute directory; tests give each run its own).
const EnvServersDir = "TOOLHOST_SERVERS_DIR"

// ServersDir is the directory toolhost's servers register in: EnvServersDir,
// else "servers" beside toolhost's secrets directory (secrets.Dir:
// ~/.local/state/toolhost/servers by default), which only this user may
// write.
func ServersDir() (string, error) {
	if d := os.Getenv(EnvServersDir); d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("%s=%q must be an absolute path", EnvServersDir, d)
		}
		return filepath.Clean(d), nil
	}
	dir, err := secrets.Dir()
	if err != nil {
		return "", fmt.Errorf("toolhost's server registry (set %s): %w", EnvServersDir, err)
	}
	return filepath.Join(filepath.Dir(dir), "servers"), nil
}

// RegisterServer records that this process serves on addr's TCP port until
// the returned function is called (or the process is gone).
func RegisterServer(addr net.Addr) (func(), error) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return func() {}, nil
	}
	dir, err := ServersDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server registry: %w", err)
	}
	self, err := procs.Self()
	if err != nil {
		return nil, err
	}
	name := filepath.Join(dir, fmt.Sprintf("%d-%d-%d", self.PID, self.StartTicks, tcp.Port))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("server registry: %w", err)
	}
	f.Close()
	return func() { _ = os.Remove(name) }, nil
}

// serverPorts are the TCP ports toolhost's live servers listen on, sorted.
func serverPorts() []int {
	dir, err := ServersDir()
	if err != nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var ports []int
	for _, e := range entries {
		f := strings.Split(e.Name(), "-")
		if len(f) != 3 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		ticks, err2 := strconv.ParseUint(f[1], 10, 64)
		port, err3 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || err3 != nil || port <= 0 || port > 65535 {
			continue
		}
		if !procs.Alive(pid, ticks) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		ports = append(ports, port)
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// excluded is the process's one ruleset granting every TCP port but those
// of toolhost's servers, rebuilt only when that set changes.
var excluded struct {
	mu    sync.Mutex
	ports []int
	fd    int
}

// excludingRuleset returns a new descriptor (the caller closes it) of a
// Landlock ruleset that allows connecting to every TCP port except ports.
func excludingRuleset(ports []int) (int, error) {
	excluded.mu.Lock()
	defer excluded.mu.Unlock()
	if excluded.fd <= 0 || !slices.Equal(excluded.ports, ports) {
		fd, err := buildExcluding(ports)
		if err != nil {
			return -1, err
		}
		if excluded.fd > 0 {
			unix.Close(excluded.fd)
		}
		excluded.fd, excluded.ports = fd, slices.Clone(ports)
	}
	fd, err := unix.FcntlInt(uintptr(excluded.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("dup the excluding ruleset: %w", err)
	}
	return fd, nil
}

func buildExcluding(ports []int) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_net: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	fd, err := createRuleset(&attr)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	skip := map[int]bool{}
	for _, p := range ports {
		skip[p] = true
	}
	for port := 0; port <= 65535; port++ {
		if skip[port] {
			continue
		}
		a := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
		if err := addRule(fd, ruleNetPort, unsafe.Pointer(&a)); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("landlock_add_rule port %d: %w", port, err)
		}
	}
	return fd, nil
}
