package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func useDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "secrets")
	t.Setenv(EnvDir, d)
	return d
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestDirIsCreatedClosed(t *testing.T) {
	want := useDir(t)
	got, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Dir() = %q, want %q", got, want)
	}
	if m := mode(t, got); m != 0o700 {
		t.Fatalf("mode %v, want 0700", m)
	}
}

func TestDirNarrowsOurOpenDirectory(t *testing.T) {
	d := useDir(t)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, d); m != 0o700 {
		t.Fatalf("mode %v after Dir, want 0700", m)
	}
}

func TestDirRefusesSymlinkAndRelative(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, link)
	if _, err := Dir(); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("symlinked dir: err = %v, want ErrUnsafe", err)
	}
	t.Setenv(EnvDir, "relative/secrets")
	if _, err := Dir(); err == nil {
		t.Fatal("relative TOOLHOST_SECRETS_DIR accepted")
	}
}

func TestDirDefaultsUnderStateHome(t *testing.T) {
	t.Setenv(EnvDir, "")
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	got, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(state, "toolhost", "secrets"); got != want {
		t.Fatalf("Dir() = %q, want %q", got, want)
	}
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", home)
	got, err = Dir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".local", "state", "toolhost", "secrets"); got != want {
		t.Fatalf("Dir() = %q, want %q", got, want)
	}
}

func TestDirRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	d := useDir(t)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("err = %v, want ErrUnsafe", err)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	d := useDir(t)
	if _, err := Read("k"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing secret: err = %v, want ErrNotExist", err)
	}
	for _, v := range []string{"one", "two"} {
		if err := Write("k", []byte(v)); err != nil {
			t.Fatal(err)
		}
		got, err := Read("k")
		if err != nil || string(got) != v {
			t.Fatalf("Read = %q, %v; want %q", got, err, v)
		}
	}
	if m := mode(t, filepath.Join(d, "k")); m != 0o600 {
		t.Fatalf("mode %v, want 0600", m)
	}
	ents, _ := os.ReadDir(d)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want the secret alone (no temp file left)", len(ents))
	}
}

func TestReadRefusesOpenFileAndSymlink(t *testing.T) {
	d := useDir(t)
	if _, err := Dir(); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(d, "open")
	if err := os.WriteFile(open, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read("open"); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("0644 file: err = %v, want ErrUnsafe", err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("planted"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Read("link"); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("symlink: err = %v, want ErrUnsafe", err)
	}
}

func TestNamesStayInside(t *testing.T) {
	useDir(t)
	for _, n := range []string{"", ".", "..", "../x", "a/b", ".hidden", "a\x00b"} {
		if err := Write(n, []byte("x")); err == nil {
			t.Errorf("Write(%q) accepted", n)
		}
	}
}

func TestTokenIsStableAndSharedUnderRace(t *testing.T) {
	d := useDir(t)
	const n = 16
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := Token("http")
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		}()
	}
	wg.Wait()
	for i := range got {
		if got[i] == "" || got[i] != got[0] {
			t.Fatalf("token %d = %q, token 0 = %q: every caller must get the one token", i, got[i], got[0])
		}
	}
	if len(got[0]) < 43 {
		t.Fatalf("token %q is shorter than 256 bits", got[0])
	}
	again, err := Token("http")
	if err != nil || again != got[0] {
		t.Fatalf("second Token = %q, %v; want the first", again, err)
	}
	ents, _ := os.ReadDir(d)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want the token alone", len(ents))
	}
}
