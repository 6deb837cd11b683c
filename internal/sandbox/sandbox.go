package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// ErrEscape is matched with errors.Is by every sandbox violation.
var ErrEscape = errors.New("sandbox violation")

// Limits on a path handed to the sandbox.
const (
	// MaxPathLen is the longest path accepted, in bytes.
	MaxPathLen = 4096
	// MaxPathDepth is the largest number of components accepted.
	MaxPathDepth = 64
	// MaxNameLen is the longest component accepted, in bytes (NAME_MAX).
	MaxNameLen = 255
)

// Error is a write (or read) the sandbox refused.
type Error struct {
	Agent   string
	Path    string
	Allowed []string
	Detail  string
	// Read is set when the refused operation was a read.
	Read bool
}

func (e *Error) Error() string {
	var msg string
	if e.Read {
		msg = fmt.Sprintf("Sandbox violation: %s tried to read %s (reads are limited to the project dir)", e.Agent, e.Path)
	} else {
		msg = fmt.Sprintf("Sandbox violation: %s tried to write %s (allowed: %s)", e.Agent, e.Path, strings.Join(e.Allowed, ", "))
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// RejectionKind makes the error a fault.Rejection.
func (e *Error) RejectionKind() fault.Kind { return fault.Sandbox }

// Is makes errors.Is(err, ErrEscape) true.
func (e *Error) Is(target error) bool { return target == ErrEscape }

// LocksDir is where cross-process lock files live, relative to the project.
const LocksDir = ".toolhost/locks"

// rule is one compiled allow-list pattern.
type rule struct {
	pattern string
	segs    []string
	// base is the literal directory prefix of the pattern ("." when the
	// pattern starts with a meta character or names a top-level file).
	base string
}

// Sandbox writes inside one project dir, only where the allow-list permits.
type Sandbox struct {
	dir   string
	root  *os.Root
	agent string
	allow []string
	rules []rule
	// owner names this process in temp file names (tempOwner).
	owner string
	// gates serialise this process's takers of each named lock (lock).
	gates *lockGates
}

// New opens the project dir (creating it if missing) for an agent.
func New(projectDir, agent string, allow []string) (*Sandbox, error) {
	rules, err := compile(allow)
	if err != nil {
		return nil, err
	}
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
	return &Sandbox{dir: abs, root: root, agent: agent, allow: append([]string(nil), allow...), rules: rules, owner: tempOwner(), gates: &lockGates{m: map[string]*lockGate{}}}, nil
}

func compile(allow []string) ([]rule, error) {
	rules := make([]rule, 0, len(allow))
	for _, p := range allow {
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("writeAllowList pattern %q is not a valid glob", p)
		}
		segs := strings.Split(p, "/")
		for _, s := range segs {
			if s == "" || s == "." || s == ".." { // a leading / gives an empty first segment
				return nil, fmt.Errorf("writeAllowList pattern %q must be a clean relative glob (no leading /, no empty, . or .. segments)", p)
			}
		}
		n := 0
		for n < len(segs)-1 && !hasMeta(segs[n]) {
			n++
		}
		base := "."
		if n > 0 {
			base = strings.Join(segs[:n], "/")
		}
		rules = append(rules, rule{pattern: p, segs: segs, base: base})
	}
	return rules, nil
}

func hasMeta(seg string) bool { return strings.ContainsAny(seg, `*?[]{}\`) }

// PatternBases are the base directories of an allow-list's patterns
// (project-relative, "." for the project dir itself): every write the
// list permits lands beneath one of them.
func PatternBases(allow []string) ([]string, error) {
	rules, err := compile(allow)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.base
	}
	return out, nil
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

// Bases returns the allowed base directories (project-relative, "." for the
// project dir itself) in allow-list order; every accepted write resolves
// strictly below one of them.
func (s *Sandbox) Bases() []string {
	out := make([]string, len(s.rules))
	for i, r := range s.rules {
		out[i] = r.base
	}
	return out
}

func (s *Sandbox) violation(p, detail string) error {
	return &Error{Agent: s.agent, Path: printable(p), Allowed: s.allow, Detail: detail}
}

// printable shows a path in a message without control bytes and without
// flooding it.
func printable(p string) string {
	p = strings.ReplaceAll(p, "\x00", `\x00`)
	if len(p) > 300 {
		p = p[:300] + fmt.Sprintf("…(%d bytes)", len(p))
	}
	return p
}

// clean validates a project-relative path as text and returns its cleaned
// form.
func (s *Sandbox) clean(p string) (string, error) {
	c, err := Clean(p)
	if err != nil {
		return "", s.violation(p, err.Error())
	}
	return c, nil
}

// Clean validates a path relative to the project dir as text, the way
// every operation of the door does before it matches the path against an
// allow-list, and returns it cleaned ("prd/./a//b" is "prd/a/b"); the error
// says what is wrong with it (empty, too long or deep, a NUL byte,
// absolute, or leaving the project dir once cleaned: "prd/../../etc" is
// "../etc"). Policy rules' glob() cleans paths with it, so a rule and the
// door read a path the same way.
func Clean(p string) (string, error) {
	switch {
	case p == "" || p == ".":
		return "", errors.New("empty path; name a file relative to the project dir")
	case len(p) > MaxPathLen:
		return "", fmt.Errorf("path is longer than %d bytes", MaxPathLen)
	case strings.ContainsRune(p, 0):
		return "", errors.New("NUL byte in path")
	case path.IsAbs(p) || filepath.IsAbs(p) || strings.HasPrefix(p, `\`):
		return "", errors.New("absolute paths are not allowed; use a path relative to the project dir")
	}
	c := path.Clean(p)
	switch {
	case c == "..", strings.HasPrefix(c, "../"):
		return "", ErrOutside
	case c == ".":
		return "", errors.New("empty path; name a file relative to the project dir")
	case strings.Count(c, "/")+1 > MaxPathDepth:
		return "", fmt.Errorf("path is deeper than %d components", MaxPathDepth)
	}
	for _, name := range strings.Split(c, "/") {
		if len(name) > MaxNameLen {
			// The file system would refuse it too, but only once the write
			// has made the directories above it; CheckWrite on a missing
			// parent would not see it at all.
			return "", fmt.Errorf("a path component is longer than %d bytes", MaxNameLen)
		}
	}
	return c, nil
}

// ErrOutside is Clean's error for a path that leaves the project dir.
var ErrOutside = errors.New("path leaves the project dir")

// target is a write the allow-list permits, split for the component walk.
type target struct {
	given string // as the caller wrote it, for messages
	rel   string // cleaned, project-relative
	dir   string // cleaned parent ("." for the project dir)
	leaf  string
}

// planFile checks p as text against the allow-list for a file write.
func (s *Sandbox) planFile(p string) (target, error) {
	c, err := s.clean(p)
	if err != nil {
		return target{}, err
	}
	comps := strings.Split(c, "/")
	var refusal string
	for _, r := range s.rules {
		if ok, _ := doublestar.Match(r.pattern, c); !ok {
			continue
		}
		if c == r.base {
			refusal = fmt.Sprintf("%s is the allowed directory itself; write a file inside it", c)
			continue
		}
		if d := undeclaredDotDir(r, comps[:len(comps)-1]); d != "" {
			refusal = fmt.Sprintf("dot-directory %s is not named by pattern %s", d, r.pattern)
			continue
		}
		return target{given: p, rel: c, dir: path.Dir(c), leaf: path.Base(c)}, nil
	}
	return target{}, s.violation(p, refusal)
}

// planDir checks p as text for a directory to create: some file the
// allow-list permits could live in or below it (or it is a rule's base).
func (s *Sandbox) planDir(p string) (string, error) {
	c, err := s.clean(p)
	if err != nil {
		return "", err
	}
	comps := strings.Split(c, "/")
	var refusal string
	for _, r := range s.rules {
		if !r.mayContain(c) {
			continue
		}
		if d := undeclaredDotDir(r, comps); d != "" {
			refusal = fmt.Sprintf("dot-directory %s is not named by pattern %s", d, r.pattern)
			continue
		}
		return c, nil
	}
	return "", s.violation(p, refusal)
}

// mayContain reports whether a path matching r could lie in or below
// directory c.
func (r rule) mayContain(c string) bool {
	if ok, _ := doublestar.Match(r.pattern, c+"/x"); ok {
		return true
	}
	for i := 1; i < len(r.segs); i++ {
		if ok, _ := doublestar.Match(strings.Join(r.segs[:i], "/"), c); ok {
			return true
		}
	}
	return false
}

// undeclaredDotDir returns the first directory component starting with a dot
// that no dot-segment of r's pattern names.
func undeclaredDotDir(r rule, dirs []string) string {
	for _, d := range dirs {
		if !strings.HasPrefix(d, ".") {
			continue
		}
		named := false
		for _, seg := range r.segs {
			if strings.HasPrefix(seg, ".") {
				if ok, _ := doublestar.Match(seg, d); ok {
					named = true
					break
				}
			}
		}
		if !named {
			return d
		}
	}
	return ""
}

// MarshalJSON is the one JSON file format: two-space indent, trailing
// newline, no HTML escaping (what a json.Encoder with SetIndent("", "  ")
// writes; the indenting is done by indent, in one pass).
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	compact := buf.Bytes()
	out := indent(make([]byte, 0, len(compact)+len(compact)/4), compact[:len(compact)-1])
	return append(out, '\n'), nil
}

// ErrUnchanged, returned by an UpdateJSON function, ends the update without
// writing, and UpdateJSON returns nil: the document already says what the
// caller wanted.
var ErrUnchanged = errors.New("sandbox: document unchanged")

// UpdateJSON is Update for a JSON document of type T (zero value when the
// file is missing). fn returning an error leaves the file untouched; that
// error is returned, except ErrUnchanged, which means success.
func UpdateJSON[T any](f interface {
	Update(string, func([]byte) ([]byte, error)) error
}, p string, fn func(v *T, existed bool) error) error {
	err := f.Update(p, func(old []byte) ([]byte, error) {
		var v T
		if old != nil {
			if err := wirejson.Unmarshal(old, &v); err != nil {
				return nil, &fault.CorruptFile{Path: p, Format: "JSON", Err: err}
			}
		}
		if err := fn(&v, old != nil); err != nil {
			return nil, err
		}
		return MarshalJSON(v)
	})
	if errors.Is(err, ErrUnchanged) {
		return nil
	}
	return err
}
