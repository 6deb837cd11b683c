package audit_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// benchRow is the row of a typical call.
var benchRow = &audit.Row{
	TS: time.Now(), CallID: "01J0000000000000000000000", SessionID: "sess-1", Agent: "devloop-integrator", Tool: "parse_placeholder",
	Source: "builtin", Arguments: json.RawMessage(`{"text":"ping {{var:x}}","vars":{"x":1}}`), Status: audit.StatusOK, DurationMS: 0.05,
}

// benchSinks opens n sinks on one trail, each on its own door (its own
// descriptors and lock, as n processes have).
func benchSinks(b *testing.B, n int) []*audit.FileSink {
	dir := b.TempDir()
	var sinks []*audit.FileSink
	for range n {
		door, err := sandbox.New(dir, "toolhost", []string{".toolhost/**"})
		if err != nil {
			b.Fatal(err)
		}
		sink := audit.NewFileSink(door, audit.Options{})
		b.Cleanup(func() { _ = sink.Close(); _ = door.Close() })
		sinks = append(sinks, sink)
	}
	return sinks
}

// BenchmarkFileSinkWrite is one row of a typical call written by one
// process, one row at a time: the cost the sink adds to every call (the
// chain's lock taken and released, size check and hash included).
func BenchmarkFileSinkWrite(b *testing.B) {
	sink := benchSinks(b, 1)[0]
	b.ReportAllocs()
	for b.Loop() {
		if err := sink.Write(benchRow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileSinkWrite8 is rows written by 8 goroutines of one process
// at once (a session with calls in flight): rows queued behind each other
// share one taking of the lock.
func BenchmarkFileSinkWrite8(b *testing.B) {
	sink := benchSinks(b, 1)[0]
	b.ReportAllocs()
	b.SetParallelism(4) // 8 goroutines on the 2-core machine
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := sink.Write(benchRow); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkFileSinkSixProcesses is rows written by six processes on one
// trail at once, each with calls in flight: every row may follow another
// process's, so the lock changes hands and the end of the chain is read
// again after each hand-off.
func BenchmarkFileSinkSixProcesses(b *testing.B) {
	sinks := benchSinks(b, 6)
	var next atomic.Int32
	b.ReportAllocs()
	b.SetParallelism(6)
	b.RunParallel(func(pb *testing.PB) {
		sink := sinks[int(next.Add(1))%len(sinks)]
		for pb.Next() {
			if err := sink.Write(benchRow); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
