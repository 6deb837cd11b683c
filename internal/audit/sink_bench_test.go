package audit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// BenchmarkFileSinkWrite is one row of a typical call written by one
// process: the cost the sink adds to every call (the chain's lock, size
// check and hash included).
func BenchmarkFileSinkWrite(b *testing.B) {
	door, err := sandbox.New(b.TempDir(), "toolhost", []string{".toolhost/**"})
	if err != nil {
		b.Fatal(err)
	}
	defer door.Close()
	sink := audit.NewFileSink(door, audit.Options{})
	defer sink.Close()
	row := &audit.Row{
		TS: time.Now(), CallID: "01J0000000000000000000000", SessionID: "sess-1", Agent: "devloop-integrator", Tool: "parse_placeholder",
		Source: "builtin", Arguments: json.RawMessage(`{"text":"ping {{var:x}}","vars":{"x":1}}`), Status: audit.StatusOK, DurationMS: 0.05,
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := sink.Write(row); err != nil {
			b.Fatal(err)
		}
	}
}
