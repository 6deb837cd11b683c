package main

import (
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestHelperStaysSmall: the helper is what every Bash command of the agent
// CLI pays to start, so it links none of what only toolhost's server needs.
func TestHelperStaysSmall(t *testing.T) {
	t.Parallel()
	testutil.NoDeps(t, []string{"github.com/toolhost/toolhost/cmd/toolhost-confine"},
		"github.com/spf13/", "github.com/google/cel-go", "go.opentelemetry.io/", "google.golang.org/",
		"github.com/evanw/esbuild", "github.com/tdewolff/", "github.com/antlr4-go/", "github.com/modelcontextprotocol/",
		"net/http", "github.com/toolhost/toolhost/internal/cli", "github.com/toolhost/toolhost/internal/rules")
}
