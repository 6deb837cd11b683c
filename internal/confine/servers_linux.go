package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/procs"
)

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

// excluded are the process's rulesets granting every TCP port but those of
// toolhost's servers, one per scope (a held command's also scopes signals
// and abstract sockets: Plan.exclByHolder), each rebuilt only when the set
// of ports changes.
var excluded struct {
	mu   sync.Mutex
	sets map[uint64]excludingSet
}

type excludingSet struct {
	ports []int
	fd    int
}

// excludingRuleset returns a new descriptor (the caller closes it) of a
// Landlock ruleset that allows connecting to every TCP port except ports
// and scopes what scoped names.
func excludingRuleset(ports []int, scoped uint64) (int, error) {
	excluded.mu.Lock()
	defer excluded.mu.Unlock()
	set, ok := excluded.sets[scoped]
	if !ok || !slices.Equal(set.ports, ports) {
		fd, err := buildExcluding(ports, scoped)
		if err != nil {
			return -1, err
		}
		if ok {
			unix.Close(set.fd)
		}
		if excluded.sets == nil {
			excluded.sets = map[uint64]excludingSet{}
		}
		set = excludingSet{ports: slices.Clone(ports), fd: fd}
		excluded.sets[scoped] = set
	}
	fd, err := unix.FcntlInt(uintptr(set.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("dup the excluding ruleset: %w", err)
	}
	return fd, nil
}

func buildExcluding(ports []int, scoped uint64) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_net: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, Scoped: scoped}
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
