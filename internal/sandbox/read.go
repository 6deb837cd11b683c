package sandbox

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// The read side of the door: every listing and stat a tool makes of the
// project goes through the project's os.Root, like ReadFile, so a symlink
// is followed only while it stays inside the project dir and no name a
// tool is handed leaves it.

// ReadDir lists a project-relative directory, sorted by name, under
// ReadFile's rules.
func (s *Sandbox) ReadDir(p string) ([]fs.DirEntry, error) {
	c, err := s.clean(p)
	if err != nil {
		return nil, readErr(err)
	}
	ents, err := fs.ReadDir(s.root.FS(), c)
	return ents, s.readEscape(p, err)
}

// Stat returns the info of a project-relative file or directory (a symlink
// inside the project is followed).
func (s *Sandbox) Stat(p string) (fs.FileInfo, error) {
	c, err := s.clean(p)
	if err != nil {
		return nil, readErr(err)
	}
	fi, err := s.root.Stat(c)
	return fi, s.readEscape(p, err)
}

// Walk walks the tree under the project-relative directory p as
// fs.WalkDir does: fn is called with project-relative slash names, and a
// symlink is reported, never descended into.
func (s *Sandbox) Walk(p string, fn fs.WalkDirFunc) error {
	c, err := s.clean(p)
	if err != nil {
		return readErr(err)
	}
	return fs.WalkDir(s.root.FS(), c, func(name string, d fs.DirEntry, err error) error {
		return fn(name, d, s.readEscape(name, err))
	})
}

// readEscape words os.Root's refusal of a path that leaves the project
// through a symlink as the door's violation.
func (s *Sandbox) readEscape(p string, err error) error {
	if isEscape(err) {
		return readErr(s.violation(p, "it resolves outside the project dir through a symlink"))
	}
	return err
}

// Within is the one containment check of a path named outside the door
// (an absolute path the Claude CLI sends, a directory a process is started
// in): it returns abs relative to the project dir in slash form, and false
// when abs is the project dir itself or not inside it. Both the project dir
// as given and with its symlinks resolved count, since a caller may have
// either form; abs is taken as it is (resolve its symlinks first where
// they matter).
func Within(projectDir, abs string) (string, bool) {
	roots := []string{projectDir}
	if real, err := filepath.EvalSymlinks(projectDir); err == nil && real != projectDir {
		roots = append(roots, real)
	}
	for _, root := range roots {
		rel, err := filepath.Rel(root, filepath.Clean(abs))
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		if rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !path.IsAbs(rel) {
			return rel, true
		}
	}
	return "", false
}

// RealDir resolves a project-relative directory through its symlinks and
// returns its real absolute path, for a process started in it; it must
// stay inside the project dir (the project dir itself is allowed).
func (s *Sandbox) RealDir(p string) (string, error) {
	if path.Clean(filepath.ToSlash(p)) == "." {
		return filepath.EvalSymlinks(s.dir)
	}
	c, err := s.clean(p)
	if err != nil {
		return "", readErr(err)
	}
	fi, err := s.root.Stat(c)
	if err != nil {
		return "", s.readEscape(p, err)
	}
	if !fi.IsDir() {
		return "", readErr(s.violation(p, "it is not a directory"))
	}
	real, err := filepath.EvalSymlinks(filepath.Join(s.dir, filepath.FromSlash(c)))
	if err != nil {
		return "", err
	}
	if _, ok := Within(s.dir, real); !ok {
		// Swapped between the root's check and the resolution.
		return "", readErr(s.violation(p, "it resolves outside the project dir through a symlink"))
	}
	return real, nil
}
