package bugs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time this process has used: reported per op
// (cpu-ns/op) next to wall time, which on a shared machine mostly measures
// the disk's and the other processes' load.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs op b.N times and reports its CPU time per op.
func loop(b *testing.B, op func(i int)) {
	b.Helper()
	cpu0 := processCPU()
	n := 0
	for i := 0; b.Loop(); i++ {
		op(i)
		n++
	}
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
}

// benchSizes are the store sizes the benchmarks run at: the costs must not
// grow with them (make bench; target: within 2× from the smallest to the
// largest).
var benchSizes = []int{100, 1000, 10000}

// benchStore is a store holding n bugs (written straight to disk, then
// indexed once), as a session's store is after its first call.
func benchStore(b *testing.B, n int) *Store {
	b.Helper()
	dir, door := bugsDoor(b)
	if err := os.MkdirAll(filepath.Join(dir, Dir), 0o755); err != nil {
		b.Fatal(err)
	}
	units := []string{"api", "web", "worker"}
	sevs := []string{"blocker", "major", "minor"}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		title := fmt.Sprintf("bug %d", i)
		unit := units[i%3]
		bug := Bug{
			ID: FormatID(i), Title: title, UnitID: unit, Severity: sevs[i%3], Status: Statuses[i%len(Statuses)],
			Fingerprint: Fingerprint(unit, "", title), Evidence: []Evidence{{Repro: "r", AddedAt: at}}, History: []Transition{},
			OpenedBy: "tester", CreatedAt: at, UpdatedAt: at,
		}
		data, _ := json.MarshalIndent(bug, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(Path(bug.ID))), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s := &Store{Door: door}
	if _, err := s.List(Query{Limit: 1}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkOpenNew is bug_open of a new bug into a store of n bugs: the
// lock, the fingerprint lookup, the bug file, the counter, the index line.
func BenchmarkOpenNew(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("bugs=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			loop(b, func(i int) {
				if _, err := s.Open(NewBug{Title: fmt.Sprintf("new %d", i), UnitID: "api", Severity: "minor", Evidence: Evidence{Repro: "r"}, At: time.Now()}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkOpenDuplicate is a repeated report of an existing bug that
// cites nothing new (found by its fingerprint, nothing rewritten).
func BenchmarkOpenDuplicate(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("bugs=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			nb := NewBug{Title: fmt.Sprintf("bug %d", n/2), UnitID: []string{"api", "web", "worker"}[(n/2)%3], Severity: "minor", Evidence: Evidence{Repro: "r"}, At: time.Now()}
			loop(b, func(int) {
				res, err := s.Open(nb)
				if err != nil || !res.Duplicate {
					b.Fatal(err, res.Duplicate)
				}
			})
		})
	}
}

// BenchmarkList is bug_list's query (default limit 100), unfiltered and
// by status and unit, on a store of n bugs.
func BenchmarkList(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("bugs=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			qs := []Query{{Limit: 100}, {Status: StatusOpen, Limit: 100}, {UnitID: "web", Severity: "major", Limit: 100}}
			loop(b, func(i int) {
				if _, err := s.List(qs[i%len(qs)]); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
