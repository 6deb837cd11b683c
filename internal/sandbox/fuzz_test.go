package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCheck checks the invariant of the path check: a path CheckWrite
// accepts resolves, on disk, strictly inside one of the allowed bases, with
// no symlink on the way, and matches the allow-list. Run the seeds with go
// test; fuzz with go test -fuzz=FuzzCheck ./internal/sandbox.
func FuzzCheck(f *testing.F) {
	seeds := []string{
		"prd/index.html", "prd", "prd/", "prd-evil/x", "prd/../memory/x", "prd/m/devloop/pm/k.md",
		"prd/out/x", "prd/rel-out/x", "prd/dangling", "prd/dangling-dir/x", "prd/inlink", "prd/sub/c.html",
		"prd/hard.txt", "prd/fifo", "prd/.git/config", ".toolhost/a", ".toolhost/.git/x", "timeline.ndjson",
		"units/a/tests/x", "units/b/tests/x", "docs/x", "agent-state/pm-x.json", "agent-state/pm-link.json",
		"memory/devloop/pm/k", "memory/devloop/pm2/k", "/etc/passwd", "", ".", "..", "a\x00b", `\x`,
		"prd/./a/../../prd/b", "prd//a", "units/*/tests/x", "prd/**", "prd/[a]/x",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	fx := newFixture(f)
	s := fx.sandbox(f)
	realProj, err := filepath.EvalSymlinks(fx.proj)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		resolved, err := s.CheckWrite(p)
		if err != nil {
			if !errors.Is(err, ErrEscape) && !isIOError(err) {
				t.Fatalf("CheckWrite(%q) failed with %v, neither a violation nor an I/O error", p, err)
			}
			return
		}
		rel, err := filepath.Rel(fx.proj, resolved)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			t.Fatalf("CheckWrite(%q) accepted %s, outside the project", p, resolved)
		}
		inBase := false
		for _, b := range s.Bases() {
			if b == "." || strings.HasPrefix(rel, b+"/") {
				inBase = true
			}
		}
		if !inBase {
			t.Fatalf("CheckWrite(%q) accepted %s, not strictly below any base %v", p, rel, s.Bases())
		}
		// Every existing component must be a real directory (or the leaf a
		// regular file), so the path resolves on disk exactly where it
		// says: the longest existing prefix has no symlink in it.
		existing := resolved
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			existing = filepath.Dir(existing)
		}
		real, err := filepath.EvalSymlinks(existing)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(realProj, strings.TrimPrefix(existing, fx.proj))
		if real != want {
			t.Fatalf("CheckWrite(%q) accepted %s, but %s resolves to %s through a symlink", p, rel, existing, real)
		}
		if fi, err := os.Lstat(resolved); err == nil && (!fi.Mode().IsRegular() || links(fi) != 1) {
			t.Fatalf("CheckWrite(%q) accepted %s, which is %v with %d links", p, rel, fi.Mode(), links(fi))
		}
	})
}

// isIOError reports errors that are about the file system, not the path
// (e.g. a component name longer than the file system allows).
func isIOError(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe)
}
