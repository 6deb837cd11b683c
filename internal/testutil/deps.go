package testutil

import (
	"os/exec"
	"strings"
	"testing"
)

// NoDeps fails t when one of the packages (import paths of this module)
// links, directly or not, a package whose import path starts with one of
// forbidden: what a seam test asserts of the heavy code kept behind it.
func NoDeps(t testing.TB, packages []string, forbidden ...string) {
	t.Helper()
	for _, p := range packages {
		cmd := exec.Command("go", "list", "-deps", p)
		cmd.Dir = RepoRoot(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		for dep := range strings.FieldsSeq(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s links %s", p, dep)
				}
			}
		}
	}
}
