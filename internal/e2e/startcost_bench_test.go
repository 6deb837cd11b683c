package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// startFeatures are the features BenchmarkStartCost weighs, each with the
// build tag that leaves its imports out of the binary (a tagged file pair
// beside the one place that imports it; no build but the benchmark's sets
// these tags).
var startFeatures = []struct{ name, tag string }{
	{"rules", "bench_no_rules"},         // CEL (cel-go, antlr, protobuf): internal/rules
	{"tracing", "bench_no_tracing"},     // the OTLP exporters and the SDK: cli/telemetry_otlp.go
	{"grpc", "bench_no_grpc"},           // grpc, which even the OTLP/HTTP exporters link: trace/otlp/exporters.go
	{"routes", "bench_no_routes"},       // esbuild and tdewolff/parse: triage/jsroutes.go
	{"dashboard", "bench_no_dashboard"}, // internal/dashboard: cli/dashboard_new.go
	{"upstream", "bench_no_upstream"},   // the go-sdk client of upstream servers: session/upstream.go
}

// BenchmarkStartCost says what each heavy feature costs a serve that does
// not use it: toolhost is built once in full, once without each feature
// (startFeatures) and once without all of them, and every build is started
// as an agent CLI starts it, interleaved round by round with the go-sdk
// peer (testdata/peers/gosdk), until its initialize is answered. Per build
// it prints the time to that first answer (best 3 and median of the spawns),
// the CPU time of a start (median; see firstAnswer),
// the package-init time (GODEBUG=inittrace=1, the clock of every init
// summed; median of 3 starts), the image size and the peak RSS at the first
// answer (median), and it reports the full build's ratios to go-sdk and
// what each feature adds to the full build:
//
//	go test -run '^$' -bench StartCost -benchtime 1x ./internal/e2e
//
// With TOOLHOST_BASE_BIN naming another toolhost binary (an older build),
// it runs in the same rounds as "base", for a before/after of a lever.
func BenchmarkStartCost(b *testing.B) {
	const rounds, spawns, initRuns = 30, 2, 3
	type build struct {
		name string
		argv func(dir string) []string
		path string

		cold, rss, init, cpu []float64
	}
	serve := func(bin string) func(string) []string {
		return func(dir string) []string {
			return []string{bin, "serve", "--agent", "integrator", "--project-dir", dir, "--log-level", "warn"}
		}
	}
	var all []string
	builds := []*build{{name: "full", path: buildTagged(b, "")}}
	for _, f := range startFeatures {
		all = append(all, f.tag)
		builds = append(builds, &build{name: "no-" + f.name, path: buildTagged(b, f.tag)})
	}
	builds = append(builds, &build{name: "none", path: buildTagged(b, strings.Join(all, ","))})
	if base := os.Getenv("TOOLHOST_BASE_BIN"); base != "" {
		builds = append(builds, &build{name: "base", path: base, argv: serve(base)})
	}
	// Every binary runs as a copy, as a user's installed binary does: the
	// page cache of a file the linker has just written (through a shared
	// mapping) costs every start of it more: 1–4 ms of CPU for toolhost's
	// 57 MiB image, against a cp of the same file, in runs on the shared
	// 2-core machine. "full-linked" is the release build as it was
	// linked, as the other e2e benchmarks run it.
	sdk := buildPeer(b, "gosdk")
	builds = append(builds, &build{name: "go-sdk", path: sdk, argv: fixed(sdk)})
	installed := b.TempDir()
	for _, bd := range builds {
		bd.path = installCopy(b, bd.path, filepath.Join(installed, bd.name))
		if bd.name == "go-sdk" {
			bd.argv = fixed(bd.path)
		} else {
			bd.argv = serve(bd.path)
		}
	}
	linked := testutil.Toolhost(b)
	builds = append(builds, &build{name: "full-linked", path: linked, argv: serve(linked)})
	dir := b.TempDir()
	env := withoutTelemetry(os.Environ())
	for n := 0; n < b.N; n++ {
		for _, bd := range builds {
			bd.cold, bd.rss, bd.init, bd.cpu = nil, nil, nil, nil
		}
		for r := range rounds {
			for i := range builds {
				// Rotated, so no build always starts right after the same one.
				bd := builds[(i+r)%len(builds)]
				for range spawns {
					d, hwm, cpu := firstAnswer(b, bd.argv(dir), env)
					bd.cold = append(bd.cold, ms(d))
					bd.rss = append(bd.rss, float64(hwm)/1024)
					bd.cpu = append(bd.cpu, ms(cpu))
				}
			}
		}
		for range initRuns {
			for _, bd := range builds {
				bd.init = append(bd.init, initClock(b, bd.argv(dir), env))
			}
		}
		byName := map[string]*build{}
		var sb strings.Builder
		fmt.Fprintf(&sb, "%-13s %-26s %-8s %-8s %-9s %-9s %s", "", "first answer ms best3 p50 [min–max]", "init ms", "CPU ms", "image MiB", "peak MiB", "best3 vs full")
		for _, bd := range builds {
			byName[bd.name] = bd
			fi, err := os.Stat(bd.path)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(&sb, "\n%-13s %-26s %-8.2f %-8.2f %-9.1f %-9.1f %+.2f ms", bd.name,
				fmt.Sprintf("%.2f %s", mean(best(bd.cold, 3)), ranges(bd.cold)), medianF(bd.init), medianF(bd.cpu),
				float64(fi.Size())/(1<<20), medianF(bd.rss), mean(best(bd.cold, 3))-mean(best(builds[0].cold, 3)))
		}
		// Printed, not logged: the testing package cuts a benchmark's log
		// after ten lines.
		fmt.Println(sb.String())
		full, gosdk := byName["full"], byName["go-sdk"]
		b.ReportMetric(mean(best(full.cold, 3)), "full-cold-ms")
		b.ReportMetric(mean(best(gosdk.cold, 3)), "gosdk-cold-ms")
		b.ReportMetric(mean(best(full.cold, 3))/mean(best(gosdk.cold, 3)), "cold-x-gosdk(≤1.5)")
		b.ReportMetric(medianF(full.rss)/medianF(gosdk.rss), "startRSS-x-gosdk")
		b.ReportMetric(medianF(full.cpu)/medianF(gosdk.cpu), "startCPU-x-gosdk")
		b.ReportMetric(mean(best(byName["none"].cold, 3)), "none-cold-ms")
		for _, f := range startFeatures {
			without := byName["no-"+f.name]
			b.ReportMetric(mean(best(full.cold, 3))-mean(best(without.cold, 3)), f.name+"-ms")
			b.ReportMetric(medianF(full.rss)-medianF(without.rss), f.name+"-MiB")
			b.ReportMetric(medianF(full.cpu)-medianF(without.cpu), f.name+"-cpu-ms")
		}
		if base := byName["base"]; base != nil {
			b.ReportMetric(mean(best(full.cold, 3))/mean(best(base.cold, 3)), "cold-x-base")
			b.ReportMetric(medianF(full.rss)/medianF(base.rss), "startRSS-x-base")
			b.ReportMetric(medianF(full.cpu)/medianF(base.cpu), "startCPU-x-base")
		}
	}
}

// buildTagged builds toolhost with the build tags tags (comma-separated;
// "" for the release build) like `make build`, once per test process.
func buildTagged(b *testing.B, tags string) string {
	if tags == "" {
		return testutil.Toolhost(b)
	}
	v, _ := peerBuilds.LoadOrStore("toolhost:"+tags, &peerBuild{})
	pb := v.(*peerBuild)
	pb.once.Do(func() {
		dir, err := testutil.ProcessDir("toolhost-tagged")
		if err != nil {
			pb.err = err
			return
		}
		pb.path = filepath.Join(dir, "toolhost")
		cmd := exec.Command("go", "build", "-tags", tags, "-o", pb.path, "./cmd/toolhost")
		cmd.Dir = testutil.RepoRoot(b)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			pb.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if pb.err != nil {
		b.Fatalf("build toolhost -tags %s: %v", tags, pb.err)
	}
	return pb.path
}

// installCopy copies the binary src to dst (as install or cp would: the
// kernel's copy, not a mapping) and returns dst.
func installCopy(b *testing.B, src, dst string) string {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return dst
}

// firstAnswer spawns argv and returns the time until its initialize is
// answered, the process's peak RSS (VmHWM, KiB) at that moment, and the
// CPU time (user and system) of its whole run, exit after EOF included:
// wall time on a shared machine is mostly the other processes' load, CPU
// time much less so.
func firstAnswer(b *testing.B, argv, env []string) (time.Duration, int, time.Duration) {
	t0 := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	_, _ = in.Write([]byte(peerInitialize))
	line, err := bufio.NewReader(out).ReadBytes('\n')
	d := time.Since(t0)
	if err != nil || !bytes.Contains(line, []byte("protocolVersion")) {
		b.Fatalf("%s first answer: %v %s", argv[0], err, line)
	}
	s := &loadServer{cmd: cmd, in: in}
	hwm := s.memKB("VmHWM")
	s.stop()
	return d, hwm, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// initLine is one package's line of GODEBUG=inittrace=1.
var initLine = regexp.MustCompile(`(?m)^init \S+ @\S+ ms, ([0-9.]+) ms clock`)

// initClock starts argv with GODEBUG=inittrace=1 until its first answer
// and returns the clock time of all its package inits, summed, in ms.
func initClock(b *testing.B, argv, env []string) float64 {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(env[:len(env):len(env)], "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdin = strings.NewReader(peerInitialize)
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", argv[0], err, stderr.Bytes())
	}
	total := 0.0
	for _, m := range initLine.FindAllSubmatch(stderr.Bytes(), -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		total += v
	}
	return total
}
