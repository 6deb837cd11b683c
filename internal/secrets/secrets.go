package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// EnvDir names the environment variable that overrides the directory (an
// absolute path; tests give each run its own).
const EnvDir = "TOOLHOST_SECRETS_DIR"

// maxSecret bounds what Read takes from a file: a secret is a token or a
// key, never a large file.
const maxSecret = 64 << 10

// ErrUnsafe reports a secrets directory or file that someone else could read
// or replace: owned by another user, open to the group or others, or a
// symbolic link.
var ErrUnsafe = errors.New("secrets: unsafe permissions")

// Dir returns toolhost's secrets directory for this user, creating it (and
// its parents) when missing: $TOOLHOST_SECRETS_DIR when set, else
// $XDG_STATE_HOME/toolhost/secrets, else ~/.local/state/toolhost/secrets.
// The directory must be ours and closed to everyone else: one we own with
// wider permissions is narrowed to 0700, one another user owns (or a
// symbolic link) is refused.
func Dir() (string, error) {
	dir, err := location()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: %s is not a directory (a symbolic link is not accepted)", ErrUnsafe, dir)
	}
	if !ownedByUs(fi) {
		return "", fmt.Errorf("%w: %s belongs to another user", ErrUnsafe, dir)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", fmt.Errorf("secrets: narrowing %s to 0700: %w", dir, err)
		}
	}
	return dir, nil
}

// location is where Dir lives, without touching the disk.
func location() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("secrets: %s=%q must be an absolute path", EnvDir, d)
		}
		return filepath.Clean(d), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "toolhost", "secrets"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("secrets: no home directory for the secrets (set %s): %w", EnvDir, err)
	}
	return filepath.Join(home, ".local", "state", "toolhost", "secrets"), nil
}

// Path returns the file that holds the secret called name, inside Dir.
func Path(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// checkName keeps a name to one plain file of the directory.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("secrets: %q is not a secret's name (one path element, not starting with a dot)", name)
	}
	return nil
}

// Read returns the secret called name; fs.ErrNotExist when there is none. A
// file we do not own, a symbolic link, or one the group or others may read
// is refused rather than trusted.
func Read(name string) ([]byte, error) {
	p, err := Path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ErrUnsafe, p)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || !ownedByUs(fi) || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s must be a regular file of ours with mode 0600 (it is %v)", ErrUnsafe, p, fi.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecret))
	if err != nil {
		return nil, fmt.Errorf("secrets: reading %s: %w", p, err)
	}
	return b, nil
}

// Write replaces the secret called name with data, atomically (a temp file
// of mode 0600 in the same directory, synced, renamed over the old one): a
// reader sees the old secret or the new one, never a torn one.
func Write(name string, data []byte) error {
	tmp, p, err := writeTemp(name, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("secrets: %w", err)
	}
	return syncDir(filepath.Dir(p))
}

// Token returns the secret called name, generating a random one (256 bits,
// base64url without padding) the first time. Two processes that ask at once
// get the same token: the first to link its file wins, the other reads it.
func Token(name string) (string, error) {
	if b, err := Read(name); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	t, err := NewToken()
	if err != nil {
		return "", err
	}
	tmp, p, err := writeTemp(name, []byte(t+"\n"))
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("secrets: %w", err)
		}
		// Another process made it first, or an empty file is there (written
		// by hand): take the one on disk unless it is empty.
		b, rerr := Read(name)
		if rerr != nil {
			return "", rerr
		}
		if got := strings.TrimSpace(string(b)); got != "" {
			return got, nil
		}
		if err := os.Rename(tmp, p); err != nil {
			return "", fmt.Errorf("secrets: %w", err)
		}
	}
	return t, syncDir(filepath.Dir(p))
}

// NewToken returns 256 random bits, base64url without padding.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// writeTemp writes data to a new 0600 file beside name's and syncs it.
func writeTemp(name string, data []byte) (tmp, final string, err error) {
	final, err = Path(name)
	if err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp(filepath.Dir(final), "."+name+".tmp-*")
	if err != nil {
		return "", "", fmt.Errorf("secrets: %w", err)
	}
	tmp = f.Name()
	// CreateTemp makes 0600 already; Chmod states it against any umask.
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", "", fmt.Errorf("secrets: %w", err)
	}
	return tmp, final, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	return nil
}

func ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
