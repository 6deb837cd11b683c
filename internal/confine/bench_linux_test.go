package confine

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/toolhost/toolhost/internal/agents"
)

// What confinement costs one command, piece by piece (the bash tool's whole
// added cost is BenchmarkBashConfinement in internal/e2e):
//
//	go test -run '^$' -bench . ./internal/confine

// BenchmarkPrepare is building a tester's plan: the write roots, the
// private temp dir, and the read rules carved around toolhost's secrets.
func BenchmarkPrepare(b *testing.B) {
	dir := b.TempDir()
	for _, d := range []string{"units/a/tests", "units/b/tests", "reports"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	sb := agents.Sandbox{WriteAllowList: []string{"units/*/tests/**", "reports/**", "memory/devloop/tester/**"}, Commands: agents.CommandsRequire}
	for b.Loop() {
		p, err := Prepare(Request{Agent: "devloop-tester", Sandbox: sb, ProjectDir: dir, Mkdir: mkdirIn(dir)})
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}

// BenchmarkRestrict is what a plan does to the thread that forks the
// command: capabilities dropped, no_new_privs, the seccomp filter and the
// Landlock ruleset (each on a fresh locked thread, which the runtime then
// discards, as procs does).
func BenchmarkRestrict(b *testing.B) {
	benchRestrict(b, false)
}

// BenchmarkRestrictExcludingServers is BenchmarkRestrict while a toolhost
// server is registered: the plan stacks the layer that grants every TCP
// port but the server's (about 65,000 rules, copied into each domain).
func BenchmarkRestrictExcludingServers(b *testing.B) {
	benchRestrict(b, true)
}

func benchRestrict(b *testing.B, server bool) {
	b.Setenv(EnvServersDir, b.TempDir())
	if server {
		release, err := RegisterServer(fakeAddr(8765))
		if err != nil {
			b.Fatal(err)
		}
		defer release()
	}
	p, err := Prepare(Request{Agent: "devloop-tester", Sandbox: agents.Sandbox{Commands: agents.CommandsRequire}, ProjectDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if !p.Confined() {
		b.Skip(p.Unconfined)
	}
	if server && p.exclFD < 0 {
		b.Fatalf("no excluding layer: %s", p)
	}
	for b.Loop() {
		done := make(chan error)
		go func() {
			runtime.LockOSThread()
			done <- p.Restrict()
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildExcluding is building the layer that grants every TCP port
// but one: once per process and set of server ports.
func BenchmarkBuildExcluding(b *testing.B) {
	if Detect().ABI < abiNet {
		b.Skip("needs Landlock ABI 4")
	}
	for b.Loop() {
		fd, err := buildExcluding([]int{8765}, 0)
		if err != nil {
			b.Fatal(err)
		}
		closeFD(fd)
	}
}
