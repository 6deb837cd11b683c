package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// readFixture is a project with a file, a subdirectory, a symlink inside
// it and two symlinks that leave it (to a directory and to a file holding
// a secret).
func readFixture(t *testing.T) (*Sandbox, string) {
	t.Helper()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"docs/sub", "units/api"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{"docs/a.txt": "a", "docs/sub/b.txt": "b", "units/api/main.go": "package main"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"docs/out": outside, "docs/leak": filepath.Join(outside, "secret"), "docs/in": "sub", "units/api-link": "api"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(dir, "devloop-test", []string{"docs/**"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// TestReadDoorStaysInsideTheProject: listing, walking and statting follow
// a symlink only while it stays inside the project; one that leaves it is
// the door's violation, and the walk never reports a name outside.
func TestReadDoorStaysInsideTheProject(t *testing.T) {
	t.Parallel()
	s, dir := readFixture(t)
	ents, err := s.ReadDir("docs")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if err != nil || !slices.Equal(names, []string{"a.txt", "in", "leak", "out", "sub"}) {
		t.Fatalf("ReadDir(docs) = %v, %v", names, err)
	}
	if ents, err := s.ReadDir("docs/in"); err != nil || len(ents) != 1 || ents[0].Name() != "b.txt" {
		t.Fatalf("ReadDir through an inside symlink = %v, %v", ents, err)
	}
	var se *Error
	for _, p := range []string{"docs/out", "../", "/etc"} {
		if ents, err := s.ReadDir(p); !errors.As(err, &se) || ents != nil {
			t.Errorf("ReadDir(%s) = %v, %v; want a violation", p, ents, err)
		}
	}
	if _, err := s.Stat("docs/leak"); !errors.As(err, &se) {
		t.Errorf("Stat through a leaving symlink: %v; want a violation", err)
	}
	if fi, err := s.Stat("docs/in"); err != nil || !fi.IsDir() {
		t.Errorf("Stat(docs/in) = %v, %v", fi, err)
	}
	var walked []string
	err = s.Walk("docs", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		walked = append(walked, p)
		return nil
	})
	want := []string{"docs", "docs/a.txt", "docs/in", "docs/leak", "docs/out", "docs/sub", "docs/sub/b.txt"}
	if err != nil || !slices.Equal(walked, want) {
		t.Fatalf("Walk(docs) = %v, %v; want %v (symlinks reported, never entered)", walked, err, want)
	}
	real, err := s.RealDir("units/api-link")
	if want, _ := filepath.EvalSymlinks(filepath.Join(dir, "units/api")); err != nil || real != want {
		t.Fatalf("RealDir(units/api-link) = %q, %v; want %q", real, err, want)
	}
	for _, p := range []string{"docs/out", "docs/a.txt"} {
		if _, err := s.RealDir(p); !errors.As(err, &se) {
			t.Errorf("RealDir(%s): %v; want a violation", p, err)
		}
	}
	if _, err := s.RealDir("docs/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RealDir of a missing dir: %v", err)
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		proj, abs, rel string
		ok             bool
	}{
		{proj, filepath.Join(proj, "a/b.txt"), "a/b.txt", true},
		{link, filepath.Join(proj, "a"), "a", true},
		{proj, filepath.Join(proj, "a/../../x"), "", false},
		{proj, proj, "", false},
		{proj, base + "/projx/a", "", false},
		{proj, "/etc/passwd", "", false},
	} {
		if rel, ok := Within(tc.proj, tc.abs); rel != tc.rel || ok != tc.ok {
			t.Errorf("Within(%s, %s) = %q, %v; want %q, %v", tc.proj, tc.abs, rel, ok, tc.rel, tc.ok)
		}
	}
}
