package session

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/callctx"
)

// BenchmarkOpen is the in-process part of cold start: everything serve does
// before it reads the first message.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		s, err := Open(Options{Identity: callctx.Identity{Agent: "integrator", ProjectDir: dir}, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
}
