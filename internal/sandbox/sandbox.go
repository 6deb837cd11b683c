package sandbox

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/gofrs/flock"
)

// ErrEscape is matched with errors.Is by every sandbox violation.
var ErrEscape = errors.New("sandbox violation")

// Error is a write the sandbox refused.
type Error struct {
	Agent   string
	Path    string
	Allowed []string
	Detail  string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("Sandbox violation: %s tried to write %s (allowed: %s)", e.Agent, e.Path, strings.Join(e.Allowed, ", "))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// RejectionKind makes the error a tool.Rejection.
func (e *Error) RejectionKind() string { return "sandbox" }

// Is makes errors.Is(err, ErrEscape) true.
func (e *Error) Is(target error) bool { return target == ErrEscape }

// LocksDir is where cross-process lock files live, relative to the project.
const LocksDir = ".toolhost/locks"

// Sandbox writes inside one project dir, only where the allow-list permits.
type Sandbox struct {
	dir   string
	root  *os.Root
	agent string
	allow []string
}

// New opens the project dir (creating it if missing) for an agent.
func New(projectDir, agent string, allow []string) (*Sandbox, error) {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("project dir %s: %w", abs, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("project dir %s: %w", abs, err)
	}
	for _, p := range allow {
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("writeAllowList pattern %q is not a valid glob", p)
		}
	}
	return &Sandbox{dir: abs, root: root, agent: agent, allow: append([]string(nil), allow...)}, nil
}

// With returns a sandbox on the same project for another agent and allow-list.
func (s *Sandbox) With(agent string, allow []string) (*Sandbox, error) {
	return New(s.dir, agent, allow)
}

// Close releases the project root.
func (s *Sandbox) Close() error { return s.root.Close() }

// ProjectDir is the absolute project dir.
func (s *Sandbox) ProjectDir() string { return s.dir }

// AllowList returns the globs this sandbox permits.
func (s *Sandbox) AllowList() []string { return append([]string(nil), s.allow...) }

func (s *Sandbox) violation(p, detail string) error {
	return &Error{Agent: s.agent, Path: p, Allowed: s.allow, Detail: detail}
}

// clean validates a project-relative path and returns its cleaned form.
func (s *Sandbox) clean(p string) (string, error) {
	switch {
	case p == "" || p == ".":
		return "", s.violation(p, "empty path")
	case strings.ContainsRune(p, 0):
		return "", s.violation(strings.ReplaceAll(p, "\x00", `\x00`), "NUL byte in path")
	case path.IsAbs(p) || filepath.IsAbs(p) || strings.HasPrefix(p, `\`):
		return "", s.violation(p, "absolute paths are not allowed; use a path relative to the project dir")
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", s.violation(p, "path leaves the project dir")
	}
	if c == "." {
		return "", s.violation(p, "empty path")
	}
	return c, nil
}

// allowed reports whether a cleaned path matches the allow-list.
func (s *Sandbox) allowed(c string) bool {
	for _, pat := range s.allow {
		if ok, _ := doublestar.Match(pat, c); ok {
			return true
		}
	}
	return false
}

// check returns the cleaned path if a write to p is permitted.
func (s *Sandbox) check(p string) (string, error) {
	c, err := s.clean(p)
	if err != nil {
		return "", err
	}
	if !s.allowed(c) {
		return "", s.violation(p, "")
	}
	if err := s.checkLeaf(c); err != nil {
		return "", err
	}
	return c, nil
}

// checkLeaf refuses to replace anything but a regular file with one link.
func (s *Sandbox) checkLeaf(c string) error {
	fi, err := s.root.Lstat(c)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return s.violation(c, err.Error())
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return s.violation(c, "the target is a symlink")
	case !fi.Mode().IsRegular():
		return s.violation(c, "the target is not a regular file")
	}
	return nil
}

// CheckWrite reports whether a write to p would be allowed.
func (s *Sandbox) CheckWrite(p string) (string, error) {
	c, err := s.check(p)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.dir, filepath.FromSlash(c)), nil
}

// ReadFile reads a project-relative file.
func (s *Sandbox) ReadFile(p string) ([]byte, error) {
	c, err := s.clean(p)
	if err != nil {
		return nil, err
	}
	return s.root.ReadFile(c)
}

// MkdirAll creates a directory inside the allow-list.
func (s *Sandbox) MkdirAll(p string) error {
	c, err := s.clean(p)
	if err != nil {
		return err
	}
	if !s.allowed(c) && !s.allowed(c+"/x") {
		return s.violation(p, "")
	}
	return s.root.MkdirAll(c, 0o755)
}

// Remove removes a file inside the allow-list.
func (s *Sandbox) Remove(p string) error {
	c, err := s.check(p)
	if err != nil {
		return err
	}
	return s.root.Remove(c)
}

// WriteFile atomically replaces p with data.
func (s *Sandbox) WriteFile(p string, data []byte) error {
	c, err := s.check(p)
	if err != nil {
		return err
	}
	return s.writeAtomic(c, data)
}

// WriteJSON writes v as indented JSON with a trailing newline.
func (s *Sandbox) WriteJSON(p string, v any) error {
	b, err := MarshalJSON(v)
	if err != nil {
		return err
	}
	return s.WriteFile(p, b)
}

// MarshalJSON is the one JSON file format: two-space indent, trailing
// newline, no HTML escaping.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *Sandbox) writeAtomic(c string, data []byte) error {
	dir := path.Dir(c)
	if dir != "." {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, "."+path.Base(c)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = s.root.Rename(tmp, c)
	}
	if werr != nil {
		_ = s.root.Remove(tmp)
		return werr
	}
	if d, err := s.root.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// AppendFile appends data to p (created if missing) with one write call.
func (s *Sandbox) AppendFile(p string, data []byte) error {
	c, err := s.check(p)
	if err != nil {
		return err
	}
	if dir := path.Dir(c); dir != "." {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := s.root.OpenFile(c, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// Lock takes the named cross-process lock.
func (s *Sandbox) Lock(name string) (func(), error) {
	if err := s.root.MkdirAll(LocksDir, 0o755); err != nil {
		return nil, fmt.Errorf("create lock dir: %w", err)
	}
	safe := strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace(name)
	fl := flock.New(filepath.Join(s.dir, LocksDir, safe+".lock"))
	if err := fl.Lock(); err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return func() { _ = fl.Unlock() }, nil
}

// Update runs fn on the current content of p under p's lock and writes the
// result atomically. fn receives nil when p does not exist; returning nil
// bytes and nil error leaves the file untouched.
func (s *Sandbox) Update(p string, fn func(old []byte) ([]byte, error)) error {
	c, err := s.check(p)
	if err != nil {
		return err
	}
	unlock, err := s.Lock(c)
	if err != nil {
		return err
	}
	defer unlock()
	old, err := s.root.ReadFile(c)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	next, err := fn(old)
	if err != nil || next == nil {
		return err
	}
	return s.writeAtomic(c, next)
}

// UpdateJSON is Update for a JSON document of type T (zero value when the
// file is missing). fn returning an error leaves the file untouched.
func UpdateJSON[T any](f interface {
	Update(string, func([]byte) ([]byte, error)) error
}, p string, fn func(v *T, existed bool) error) error {
	return f.Update(p, func(old []byte) ([]byte, error) {
		var v T
		if old != nil {
			if err := json.Unmarshal(old, &v); err != nil {
				return nil, fmt.Errorf("%s is not valid JSON: %w", p, err)
			}
		}
		if err := fn(&v, old != nil); err != nil {
			return nil, err
		}
		return MarshalJSON(v)
	})
}
