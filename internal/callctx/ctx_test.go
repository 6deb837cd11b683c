package callctx_test

import (
	"slices"
	"testing"

	"github.com/toolhost/toolhost/internal/callctx"
)

// TestProgressOnlyIncreases: MCP requires progress to increase with every
// notification; a tool that reports the same or a lower value is not passed
// on, whatever transport sends it.
func TestProgressOnlyIncreases(t *testing.T) {
	t.Parallel()
	var sent []float64
	c, err := callctx.New(callctx.Identity{}, callctx.Services{}, callctx.Settings{}, callctx.Meta{},
		func(p, _ float64, _ string) { sent = append(sent, p) })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []float64{1, 1, 0.5, 2, 3, 2.5, 10} {
		c.Progress(p, 10, "step")
	}
	if !slices.Equal(sent, []float64{1, 2, 3, 10}) {
		t.Fatalf("sent %v, want 1 2 3 10", sent)
	}
	// Without a progressToken the call still has a Progress to call.
	c, err = callctx.New(callctx.Identity{}, callctx.Services{}, callctx.Settings{}, callctx.Meta{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Progress(1, 0, "")
}
