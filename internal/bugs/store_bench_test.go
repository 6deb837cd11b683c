package bugs

import (
	"fmt"
	"testing"
	"time"
)

// benchStore is a store holding n bugs.
func benchStore(b *testing.B, n int) *Store {
	b.Helper()
	_, door := bugsDoor(b)
	s := &Store{Door: door}
	for i := range n {
		if _, err := s.Open(NewBug{Title: fmt.Sprintf("bug %d", i), Severity: "minor", Evidence: Evidence{Repro: "r"}, At: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkOpenNew is one new bug opened into a store of 300 (the six-agent
// test's size) and growing: lock, scan for the fingerprint, write.
func BenchmarkOpenNew(b *testing.B) {
	s := benchStore(b, 300)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Open(NewBug{Title: fmt.Sprintf("new %d", i), Severity: "minor", Evidence: Evidence{Repro: "r"}, At: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenDuplicate is a repeated report of an existing bug among 300.
func BenchmarkOpenDuplicate(b *testing.B) {
	s := benchStore(b, 300)
	b.ResetTimer()
	for b.Loop() {
		res, err := s.Open(NewBug{Title: "bug 150", Severity: "minor", Evidence: Evidence{Repro: "r"}, At: time.Now()})
		if err != nil || !res.Duplicate {
			b.Fatal(err, res.Duplicate)
		}
	}
}
