package confine

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

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
