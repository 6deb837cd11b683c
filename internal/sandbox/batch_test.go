package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFilesIsOneDecision: a batch whose last file is refused — by the
// allow-list, by a symlink on the way, by a directory at the leaf — changes
// nothing, not even the allowed files before it; a good batch writes every
// file.
func TestWriteFilesIsOneDecision(t *testing.T) {
	t.Parallel()
	refused := []struct{ name, path, detail string }{
		{"outside the allow-list", "memory/other/x.txt", "(allowed: "},
		{"through a symlink", "prd/out/secret.txt", "prd/out is a symlink"},
		{"a directory leaf", "prd/dir", "is a directory"},
		{"in a new dir below a symlink", "prd/sub/new/page.html", "prd/sub is a symlink"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			s := fx.sandbox(t)
			before := snapshot(t, fx.root)
			err := s.WriteFiles([]File{
				{Path: "prd/index.html", Data: []byte("<h1>new</h1>\n")},
				{Path: "prd/fresh/dir/page.html", Data: []byte("page\n")},
				{Path: tc.path, Data: []byte("x\n")},
			})
			if !errors.Is(err, ErrEscape) || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("WriteFiles = %v, want a sandbox violation naming %q", err, tc.detail)
			}
			if d := diff(before, snapshot(t, fx.root), func(string) bool { return false }); len(d) > 0 {
				t.Fatalf("a refused batch changed %v", d)
			}
		})
	}
	t.Run("all written", func(t *testing.T) {
		t.Parallel()
		fx := newFixture(t)
		s := fx.sandbox(t)
		files := []File{
			{Path: "prd/index.html", Data: []byte("<h1>new</h1>\n")},
			{Path: "prd/fresh/dir/page.html", Data: []byte("page\n")},
			{Path: "agent-state/pm-todo.json", Data: []byte("{}\n")},
		}
		if err := s.WriteFiles(files); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			got, err := os.ReadFile(filepath.Join(fx.proj, f.Path))
			if err != nil || string(got) != string(f.Data) {
				t.Errorf("%s = %q, %v; want %q", f.Path, got, err, f.Data)
			}
		}
		for p := range snapshot(t, fx.root) {
			if strings.Contains(p, ".toolhost-tmp-") {
				t.Errorf("temp file left behind: %s", p)
			}
		}
	})
	t.Run("a path twice", func(t *testing.T) {
		t.Parallel()
		fx := newFixture(t)
		s := fx.sandbox(t)
		before := snapshot(t, fx.root)
		err := s.WriteFiles([]File{{Path: "prd/a.html", Data: []byte("1")}, {Path: "prd/./a.html", Data: []byte("2")}})
		if err == nil || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("WriteFiles = %v, want the duplicate refused", err)
		}
		if d := diff(before, snapshot(t, fx.root), func(string) bool { return false }); len(d) > 0 {
			t.Fatalf("changed %v", d)
		}
	})
}
