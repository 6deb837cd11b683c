package e2e

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// BenchmarkSharedProject is the deployment toolhost is designed for:
// several agent sessions, each its own `serve` process, on one project,
// taking turns. Every call of the alternating runs comes from another
// process than the call before it, so each one takes the audit trail's
// (and the timeline's) cross-process lock after another holder: what a
// hand-off between processes costs shows as the gap to one session alone
// on its own project. It runs a writing call (timeline_append: a timeline
// entry and an audit row) and `bash true` (a confined command), each with
// one session alone and 2 and 6 sessions alternating, interleaved round by
// round so all see the same machine, and reports the median latency of
// each, the median over rounds of each round's ratio to one session alone
// (target ≤ 2×; every round's ratio is in the log). The sink's own CPU
// per row is BenchmarkFileSink* in internal/audit. With TOOLHOST_BASE_BIN
// naming another build, that build runs the same configurations in the
// same rounds ("base-" figures):
//
//	go test -run '^$' -bench SharedProject -benchtime 1x ./internal/e2e
func BenchmarkSharedProject(b *testing.B) {
	cases := []struct {
		name  string
		call  string
		calls int // per round and configuration
	}{
		{"timeline_append", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"bench.tick","message":"tick"}}}` + "\n", 600},
		{"bash", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"bash","arguments":{"command":"true"}}}` + "\n", 120},
	}
	const rounds = 5
	builds := []struct{ prefix, bin string }{{"", testutil.Toolhost(b)}}
	if base := os.Getenv("TOOLHOST_BASE_BIN"); base != "" {
		builds = append(builds, struct{ prefix, bin string }{"base-", base})
	}
	env := withoutTelemetry(os.Environ())
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				type config struct {
					name string
					ss   []*loadServer
				}
				var configs []config
				var all []*loadServer
				for _, bd := range builds {
					alone := startOn(b, bd.bin, env, b.TempDir())
					shared := b.TempDir()
					var six []*loadServer
					for range 6 {
						six = append(six, startOn(b, bd.bin, env, shared))
					}
					all = append(append(all, alone), six...)
					configs = append(configs, config{bd.prefix + "alone", []*loadServer{alone}}, config{bd.prefix + "2", six[:2]}, config{bd.prefix + "6", six})
				}
				defer func() {
					for _, s := range all {
						s.stop()
					}
				}()
				id := 0
				// Warm every process (the first bash call also starts the
				// session's warden).
				for _, s := range all {
					alternate(b, []*loadServer{s}, c.call, &id, 2)
				}
				lat := map[string][]time.Duration{}
				perRound := map[string][]float64{}
				for r := 0; r < rounds; r++ {
					p50 := map[string]time.Duration{}
					for i := range configs {
						cf := configs[(i+r)%len(configs)]
						l := alternate(b, cf.ss, c.call, &id, c.calls)
						lat[cf.name] = append(lat[cf.name], l...)
						p50[cf.name] = median(l)
					}
					for _, bd := range builds {
						for _, k := range []string{"2", "6"} {
							perRound[bd.prefix+k] = append(perRound[bd.prefix+k], float64(p50[bd.prefix+k])/float64(p50[bd.prefix+"alone"]))
						}
					}
				}
				for _, bd := range builds {
					p := bd.prefix
					b.ReportMetric(ms(median(lat[p+"alone"])), p+"alone-p50-ms")
					for _, k := range []string{"2", "6"} {
						b.ReportMetric(ms(median(lat[p+k])), p+k+"-alternating-p50-ms")
						b.ReportMetric(medianF(perRound[p+k]), p+k+"-x-alone(≤2)")
						b.Logf("%s%s sessions alternating / alone, per round: %s", p, k, ranges(perRound[p+k]))
					}
				}
			}
		})
	}
}

// startOn starts an Integrator session of the binary bin on project dir.
func startOn(b *testing.B, bin string, env []string, dir string) *loadServer {
	b.Helper()
	return startProcess(b, []string{bin, "serve", "--agent", "integrator", "--project-dir", dir, "--log-level", "warn"}, env)
}

// alternate sends n calls, one at a time, to the servers in turn (call i
// to ss[i%len(ss)]), each after the previous one's answer, and returns
// their latencies; id numbers the requests.
func alternate(b *testing.B, ss []*loadServer, call string, id *int, n int) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		s := ss[i%len(ss)]
		*id++
		t0 := time.Now()
		fmt.Fprintf(s.in, call, *id)
		line, err := s.out.ReadBytes('\n')
		if err != nil || !bytes.Contains(line, []byte(`\"ok\":true`)) {
			b.Fatalf("call %d: %v %s", *id, err, line)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat
}
