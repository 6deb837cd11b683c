package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := New(dir, "devloop-integrator", []string{"integration/**"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "integration-out")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr bool
	}{
		{"inside the allow-list", "integration/logs/api.err.log", false},
		{"outside the allow-list", "units/api/x.log", true},
		{"escape", "integration/../../x.log", true},
		{"absolute", "/tmp/x.log", true},
		{"prefix confusion", "integration-out/x.log", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := s.OpenAppend(tt.path)
			if tt.wantErr {
				if !errors.Is(err, ErrEscape) {
					t.Fatalf("OpenAppend(%q) = %v, want a sandbox violation", tt.path, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenAppend(%q): %v", tt.path, err)
			}
			defer f.Close()
			for _, line := range []string{"one\n", "two\n"} {
				if _, err := f.WriteString(line); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(filepath.Join(dir, tt.path))
			if err != nil || string(got) != "one\ntwo\n" {
				t.Fatalf("content = %q, %v; want both lines appended", got, err)
			}
		})
	}
}
