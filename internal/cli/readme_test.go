package cli

import (
	"flag"
	"os"
	"os/exec"
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

// TestREADMELayout keeps the README's Layout a map of the whole module:
// every package `go list ./...` names has a line of its own (path, then
// what it holds, on that one line), and every path there exists.
func TestREADMELayout(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	_, block, ok := strings.Cut(after, "\n```\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```\n")
	}
	if !ok {
		t.Fatal("README.md's Layout section has no ``` block")
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		dir, what, _ := strings.Cut(line, " ")
		if !strings.HasSuffix(dir, "/") || strings.TrimSpace(what) == "" {
			t.Errorf("Layout line %q: want a directory (ending in /) and what it holds, on one line", line)
			continue
		}
		dir = strings.TrimSuffix(dir, "/")
		if listed[dir] {
			t.Errorf("Layout names %s twice", dir)
		}
		listed[dir] = true
		if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || !fi.IsDir() {
			t.Errorf("Layout names %s, which is not a directory of the repository", dir)
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(abs, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !listed[filepath.ToSlash(rel)] {
			t.Errorf("README.md's Layout does not name package %s/ (one line: the path, then what it holds)", filepath.ToSlash(rel))
		}
	}
}
