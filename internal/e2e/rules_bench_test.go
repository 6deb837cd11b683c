package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/configs"
)

// cpuNS is the CPU time the server process has used, user and system,
// all its threads (/proc/PID/stat, in clock ticks of 10 ms), in ns.
func (s *loadServer) cpuNS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return (utime + stime) * int64(10*time.Millisecond)
}

// BenchmarkStdioRules50 is the cost of rules on the hot path through the
// binary: two servers, one with the embedded policy and one with the same
// policy plus 50 rules none of which can apply to the benchmark's tool,
// both given as --policy files (both stat the file per call), driven with
// the sequential load in alternating blocks of 50 calls (b.N calls each),
// so a shared machine's load falls on both alike. The overhead is the
// median of the blocks' time ratios (target: within 5%).
//
//	go test -run '^$' -bench StdioRules50 -benchtime 20000x ./internal/e2e
func BenchmarkStdioRules50(b *testing.B) {
	dir := b.TempDir()
	plain := filepath.Join(dir, "plain.json")
	if err := os.WriteFile(plain, configs.ToolsJSON, 0o644); err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(configs.ToolsJSON, &doc); err != nil {
		b.Fatal(err)
	}
	var rs []map[string]any
	for i := range 50 {
		r := map[string]any{"id": fmt.Sprintf("r%02d", i), "effect": "deny", "reason": "r"}
		switch i % 5 {
		case 0:
			r["tool"], r["when"] = "{bash,Bash}", fmt.Sprintf("cmd.programs.exists(p, p == 'prog%d')", i)
		case 1:
			r["tool"], r["when"] = "github__*", fmt.Sprintf("args.repo == 'repo%d'", i)
		case 2:
			r["tool"], r["when"] = "spawn_units", fmt.Sprintf("args.units.exists(u, u.id == 'u%d')", i)
		case 3:
			r["tool"], r["when"] = "Write", fmt.Sprintf("glob(args.file_path, 'dir%d/**')", i)
		default:
			r["tool"], r["when"], r["effect"] = "run_case", fmt.Sprintf("has(args.case_path) && args.case_path.endsWith('%d.json')", i), "confirm"
		}
		rs = append(rs, r)
	}
	doc["rules"] = rs
	withRules := filepath.Join(dir, "rules.json")
	body, _ := json.Marshal(doc)
	if err := os.WriteFile(withRules, body, 0o644); err != nil {
		b.Fatal(err)
	}
	a, r := startLoadServer(b, "--policy", plain), startLoadServer(b, "--policy", withRules)
	defer a.stop()
	defer r.stop()
	id := 0
	run := func(s *loadServer, n int) time.Duration {
		t0 := time.Now()
		for range n {
			id++
			fmt.Fprintf(s.in, benchCall, id)
			line, err := s.out.ReadBytes('\n')
			if err != nil || !bytes.Contains(line, []byte(`"ok":true`)) {
				b.Fatalf("call %d: %v %s", id, err, line)
			}
		}
		return time.Since(t0)
	}
	// Warm both up (schemas compiled, pages touched) before measuring.
	run(a, 200)
	run(r, 200)
	const block = 50
	var ratios []float64
	var ta, tr time.Duration
	ca, cr := a.cpuNS(), r.cpuNS()
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		n := min(block, b.N-done)
		var da, dr time.Duration
		if i%2 == 0 {
			da, dr = run(a, n), run(r, n)
		} else {
			dr, da = run(r, n), run(a, n)
		}
		ta, tr = ta+da, tr+dr
		ratios = append(ratios, float64(dr)/float64(da))
		done += n
	}
	ca, cr = a.cpuNS()-ca, r.cpuNS()-cr
	slices.Sort(ratios)
	b.ReportMetric(float64(b.N)/ta.Seconds(), "calls/s-no-rules")
	b.ReportMetric(float64(b.N)/tr.Seconds(), "calls/s-50-rules")
	b.ReportMetric(100*(ratios[len(ratios)/2]-1), "median-%-overhead")
	// Server CPU time per call is what the rules could add, and it is
	// less at the mercy of the scheduler than wall time.
	b.ReportMetric(float64(ca)/float64(b.N)/1000, "server-cpu-µs/call-no-rules")
	b.ReportMetric(float64(cr)/float64(b.N)/1000, "server-cpu-µs/call-50-rules")
	b.ReportMetric(float64(a.memKB("RssAnon"))/1024, "anon-RSS-MiB-no-rules")
	b.ReportMetric(float64(r.memKB("RssAnon"))/1024, "anon-RSS-MiB-50-rules")
}
