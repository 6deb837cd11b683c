package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// BenchmarkBashConfinement is what confinement adds to a command: the bash
// tool running `true` through the real binary, in a tester session that
// confines it (Landlock ruleset, private $TMPDIR) and in one whose agent
// has sandbox.commands off, calls alternating so both see the same
// machine. It reports the median of each and their difference:
//
//	go test -run '^$' -bench BashConfinement -benchtime 300x ./internal/e2e
func BenchmarkBashConfinement(b *testing.B) {
	benchBashConfinement(b)
}

// BenchmarkBashConfinementServerRunning is BenchmarkBashConfinement while a
// toolhost server (a dashboard, serve --http) is registered: each confined
// command then also gets the Landlock layer that keeps it off that port
// (every other TCP port granted, about 65,000 rules).
//
//	go test -run '^$' -bench BashConfinementServerRunning -benchtime 100x ./internal/e2e
func BenchmarkBashConfinementServerRunning(b *testing.B) {
	serverRunning(b)
	benchBashConfinement(b)
}

// serverRunning registers this process as a toolhost server on port 1 in a
// registry of the benchmark's own, which the toolhost it starts reads.
func serverRunning(b *testing.B) {
	b.Setenv(confine.EnvServersDir, b.TempDir())
	release, err := confine.RegisterServer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(release)
}

func benchBashConfinement(b *testing.B) {
	off := writeAgents(b, func(a map[string]any) { a["sandbox"].(map[string]any)["commands"] = "off" })
	start := func(args ...string) *stdioclient.Client {
		dir := b.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "units/a/tests"), 0o755); err != nil {
			b.Fatal(err)
		}
		return testutil.Serve(b, append([]string{"--project-dir", dir, "--agent", "tester", "--log-level", "warn"}, args...)...)
	}
	confined, plain := start(), start("--agents", off)
	call := func(c *stdioclient.Client) time.Duration {
		t0 := time.Now()
		r, err := c.CallTool(context.Background(), "bash", map[string]any{"command": "true"}, nil)
		d := time.Since(t0)
		if err != nil || r.IsError {
			b.Fatalf("bash: %v %+v", err, r)
		}
		return d
	}
	// Warm both (the first command also starts the session's warden).
	call(confined)
	call(plain)
	var on, offs []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			on = append(on, call(confined))
			offs = append(offs, call(plain))
		} else {
			offs = append(offs, call(plain))
			on = append(on, call(confined))
		}
	}
	b.StopTimer()
	m1, m0 := median(on), median(offs)
	b.ReportMetric(ms(m1), "confined-p50-ms")
	b.ReportMetric(ms(m0), "off-p50-ms")
	b.ReportMetric(ms(m1-m0), "added-p50-ms")
}

// BenchmarkConfineReexec is the other way to confine a command, measured
// for the design note: `toolhost confine -- true` (a whole Go start of
// toolhost, then exec) against `true` run directly, alternating.
//
//	go test -run '^$' -bench ConfineReexec -benchtime 200x ./internal/e2e
func BenchmarkConfineReexec(b *testing.B) {
	benchConfineReexec(b)
}

// BenchmarkConfineReexecServerRunning is BenchmarkConfineReexec while a
// toolhost server is registered: each `toolhost confine` builds the layer
// that keeps its command off the server's port, then applies it.
//
//	go test -run '^$' -bench ConfineReexecServerRunning -benchtime 50x ./internal/e2e
func BenchmarkConfineReexecServerRunning(b *testing.B) {
	serverRunning(b)
	benchConfineReexec(b)
}

func benchConfineReexec(b *testing.B) {
	bin := testutil.Toolhost(b)
	dir := b.TempDir()
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	run := func(name string, args ...string) time.Duration {
		t0 := time.Now()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v %s", name, err, out)
		}
		return time.Since(t0)
	}
	var via, direct []time.Duration
	for range b.N {
		via = append(via, run(bin, "confine", "--agent", "tester", "--project-dir", dir, "--", truePath))
		direct = append(direct, run(truePath))
	}
	b.ReportMetric(ms(median(via)), "confine-p50-ms")
	b.ReportMetric(ms(median(direct)), "direct-p50-ms")
	b.ReportMetric(ms(median(via)-median(direct)), "added-p50-ms")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkHolderReexec is what the holder adds to every command the bash
// tool, spawn_units and upstreams start (confine/holder.go): `HOLDER
// toolhost-holder call - -- true` (a Go start that becomes the subreaper,
// announces itself, starts true and exits with it), in a session of its own
// as procs starts it, against `true` run the same way, alternating — with
// the helper beside toolhost as the holder (what toolhost runs when it is
// installed: confine.Helper) and with the whole toolhost (without it).
//
//	go test -run '^$' -bench HolderReexec -benchtime 200x ./internal/e2e
func BenchmarkHolderReexec(b *testing.B) {
	bin, helper := testutil.Toolhost(b), testutil.ConfineHelper(b)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	reg, err := os.Create(filepath.Join(b.TempDir(), "registration"))
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	run := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		cmd.ExtraFiles = []*os.File{reg}
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v %s", name, err, out)
		}
		return time.Since(t0)
	}
	var byHelper, byToolhost, direct []time.Duration
	for range b.N {
		byHelper = append(byHelper, run(helper, "toolhost-holder", "call", "-", "--", truePath))
		direct = append(direct, run(truePath))
		byToolhost = append(byToolhost, run(bin, "toolhost-holder", "call", "-", "--", truePath))
	}
	b.ReportMetric(ms(median(direct)), "direct-p50-ms")
	b.ReportMetric(ms(median(byHelper)-median(direct)), "added-helper-p50-ms")
	b.ReportMetric(ms(median(byToolhost)-median(direct)), "added-toolhost-p50-ms")
}
