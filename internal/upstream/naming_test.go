package upstream

import (
	"sort"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/tool"
)

func TestToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	cases := []struct {
		name, server, remote string
		want                 string // exact, or "" to check only the rules
		renamed              bool
	}{
		{"plain", "github", "create_issue", "github__create_issue", false},
		{"dash", "my-srv", "get-thing", "my-srv__get-thing", false},
		{"exactly 64", "s", strings.Repeat("a", 61), "s__" + strings.Repeat("a", 61), false},
		{"too long", "s", long, "", true},
		{"dots", "fs", "read.file", "", true},
		{"unicode", "fs", "lire_fichier_é", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, renamed := ToolName(c.server, c.remote)
			if renamed != c.renamed || (c.want != "" && got != c.want) {
				t.Fatalf("ToolName(%q, %q) = %q, %v; want %q, %v", c.server, c.remote, got, renamed, c.want, c.renamed)
			}
			if !tool.NamePattern().MatchString(got) {
				t.Fatalf("%q does not match %s", got, tool.NamePattern())
			}
			again, _ := ToolName(c.server, c.remote)
			if again != got {
				t.Fatalf("not deterministic: %q then %q", got, again)
			}
		})
	}
	a, _ := ToolName("fs", "read.file")
	b, _ := ToolName("fs", "read_file")
	if a == b {
		t.Errorf("read.file and read_file must not share the name %q", a)
	}
	l1, _ := ToolName("s", long+"1")
	l2, _ := ToolName("s", long+"2")
	if l1 == l2 {
		t.Errorf("two long names that differ only at the end share %q", l1)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
