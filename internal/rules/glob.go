//go:build !bench_no_rules

package rules

import (
	"errors"
	"path"
	"path/filepath"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolhost/toolhost/internal/sandbox"
)

// globber is glob(path, pattern): whether a path matches a doublestar
// pattern (the syntax of the agents' writeAllowList), the path read the
// way the sandbox door reads it.
//
// A path is cleaned with sandbox.Clean, so "./units/../contracts/a.json"
// is "contracts/a.json". A relative pattern matches the path relative to
// the project dir: a relative path is taken relative to the project dir
// (a toolhost tool's path argument), an absolute one inside the project
// dir is made relative (the Claude CLI sends absolute file_paths), so
// "contracts/**" matches both. An absolute pattern ("/etc/**") matches the
// absolute path. A path outside the project dir matches no relative
// pattern. A path the door would refuse as text (a NUL byte, too long,
// too deep) is an error, so a rule over it cannot be passed by it.
type globber struct {
	// dirs are the project dir as given and with its symlinks resolved
	// (the CLI may report either form); empty when the rules were compiled
	// without one (policy check): relative paths are then only cleaned.
	dirs []string
}

func newGlobber(projectDir string) *globber {
	g := &globber{}
	if projectDir == "" {
		return g
	}
	if abs, err := filepath.Abs(projectDir); err == nil {
		g.dirs = append(g.dirs, filepath.ToSlash(abs))
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			g.dirs = append(g.dirs, filepath.ToSlash(real))
		}
	}
	return g
}

func (g *globber) binding(p, pattern ref.Val) ref.Val {
	ps, ok1 := p.(types.String)
	pat, ok2 := pattern.(types.String)
	if !ok1 || !ok2 {
		return types.MaybeNoSuchOverloadErr(p)
	}
	ok, err := g.match(string(ps), string(pat))
	if err != nil {
		return types.NewErr("glob(%q, %q): %v", string(ps), string(pat), err)
	}
	return types.Bool(ok)
}

func (g *globber) match(p, pattern string) (bool, error) {
	if !doublestar.ValidatePattern(pattern) {
		return false, errors.New("the pattern is not a valid glob")
	}
	rel, abs, err := g.canonical(p)
	if err != nil {
		return false, err
	}
	if !strings.HasPrefix(pattern, "/") {
		return rel != "" && doublestar.MatchUnvalidated(pattern, rel), nil
	}
	if rel == "" {
		return abs != "" && doublestar.MatchUnvalidated(pattern, abs), nil
	}
	// Inside the project: the project dir as given or resolved.
	for _, d := range g.dirs {
		if doublestar.MatchUnvalidated(pattern, path.Join(d, rel)) {
			return true, nil
		}
	}
	return false, nil
}

// canonical returns p relative to the project dir (when it lies inside)
// and absolute (when the project dir is known or p is absolute).
func (g *globber) canonical(p string) (rel, abs string, err error) {
	if p == "" {
		return "", "", nil
	}
	if strings.ContainsRune(p, 0) {
		return "", "", errors.New("NUL byte in path")
	}
	p = filepath.ToSlash(p)
	switch {
	case path.IsAbs(p):
		abs = path.Clean(p)
	case len(g.dirs) > 0:
		abs = path.Join(g.dirs[0], p)
	}
	if abs != "" {
		r, inside := g.inside(abs)
		if !inside {
			return "", abs, nil
		}
		p = r
	}
	rel, err = sandbox.Clean(p)
	switch {
	case errors.Is(err, sandbox.ErrOutside):
		return "", abs, nil
	case err != nil && p == ".":
		return "", abs, nil // the project dir itself
	case err != nil:
		return "", "", err
	}
	return rel, abs, nil
}

// inside returns abs relative to the project dir, and whether it lies
// inside it.
func (g *globber) inside(abs string) (string, bool) {
	for _, d := range g.dirs {
		if abs == d {
			return ".", true
		}
		if r, ok := strings.CutPrefix(abs, strings.TrimSuffix(d, "/")+"/"); ok {
			return r, true
		}
	}
	return "", false
}
