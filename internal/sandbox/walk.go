package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// openDir opens the project-relative directory dir one component at a time.
// Each component is inspected with Lstat in its parent (no symlink is
// followed there), must be a real directory, and is then opened with
// OpenRoot on the parent root; the opened directory must be the inspected
// one (same device and inode), so a swap between the two steps is caught.
// Because every root is opened inside the previous one, the kernel keeps the
// chain below the project dir even if the tree changes afterwards.
//
// With create set, missing components are made (mkdirat, which never
// follows a symlink). Without it, a missing component returns (nil, nil):
// the write would create it.
func (s *Sandbox) openDir(given, dir string, create bool) (*os.Root, error) {
	cur, err := s.root.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	if dir == "." {
		return cur, nil
	}
	comps := strings.Split(dir, "/")
	for i, name := range comps {
		next, err := s.step(cur, name, create)
		cur.Close()
		if err != nil {
			return nil, s.stepError(given, path.Join(comps[:i+1]...), err)
		}
		if next == nil {
			return nil, nil
		}
		cur = next
	}
	return cur, nil
}

// openTarget checks p as text for a file write (planFile) and opens its
// parent directory with openDir: with create unset, a missing directory
// gives a nil root and no error.
func (s *Sandbox) openTarget(p string, create bool) (target, *os.Root, error) {
	t, err := s.planFile(p)
	if err != nil {
		return target{}, nil, err
	}
	dir, err := s.openDir(t.given, t.dir, create)
	return t, dir, err
}

var (
	errSymlink = errors.New("is a symlink")
	errNotDir  = errors.New("is not a directory")
	errSwapped = errors.New("was replaced while it was being opened")
)

func (s *Sandbox) stepError(given, at string, err error) error {
	switch {
	case errors.Is(err, errSymlink):
		return s.violation(given, at+" is a symlink; the sandbox never writes through symlinks")
	case errors.Is(err, errNotDir):
		return s.violation(given, at+" is not a directory")
	case errors.Is(err, errSwapped):
		return s.violation(given, at+" was replaced while it was being opened; retry")
	case isEscape(err):
		return s.violation(given, at+" resolves outside the allowed directory")
	}
	return fmt.Errorf("open %s: %w", at, err)
}

// isEscape reports the error os.Root gives for a path leaving the root.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func (s *Sandbox) step(parent *os.Root, name string, create bool) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, nil
		}
		if err := parent.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		fi, err = parent.Lstat(name)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, errSymlink
	case !fi.IsDir():
		return nil, errNotDir
	}
	child, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	st, err := child.Stat(".")
	if err != nil || !os.SameFile(fi, st) {
		child.Close()
		if err == nil {
			err = errSwapped
		}
		return nil, err
	}
	return child, nil
}

// checkLeaf refuses to replace or append to anything but a regular file with
// one link. It returns the leaf's info, or nil when the leaf does not exist.
func (s *Sandbox) checkLeaf(dir *os.Root, t target) (fs.FileInfo, error) {
	fi, err := dir.Lstat(t.leaf)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.leafProblem(t, fi); err != nil {
		return nil, err
	}
	return fi, nil
}

func (s *Sandbox) leafProblem(t target, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return s.violation(t.given, t.rel+" is a symlink; the sandbox never writes through symlinks")
	case fi.IsDir():
		return s.violation(t.given, t.rel+" is a directory; name a file inside it")
	case !fi.Mode().IsRegular():
		return s.violation(t.given, t.rel+" is not a regular file")
	case links(fi) > 1:
		return s.violation(t.given, fmt.Sprintf("%s has %d hard links; the sandbox refuses to write a file that is also reachable elsewhere", t.rel, links(fi)))
	}
	return nil
}

func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
