package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/agents"
)

var update = flag.Bool("update", false, "rewrite generated README sections")

// TestREADMEAgentsTable keeps the README's agent table equal to
// `toolhost agents doc`, so it cannot drift from configs/agents.json.
func TestREADMEAgentsTable(t *testing.T) {
	set, err := agents.Load("")
	if err != nil {
		t.Fatal(err)
	}
	want := AgentsMarkdown(set)
	path := filepath.Join("..", "..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- agents-doc:begin -->\n", "<!-- agents-doc:end -->"
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q … %q markers", begin, end)
	}
	got := s[i+len(begin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i+len(begin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README agent table is stale; run: go test ./internal/cli -run TestREADMEAgentsTable -update")
}
