package confine

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Hidden paths are directories no confined process may read, list or write
// beneath, whatever else it may read: toolhost's secrets (the bearer token
// of `serve --http` …), which live outside every project but in the home
// directory of the very user the command runs as, so file modes cannot keep
// them from it.
//
// Landlock grants a right on a directory for everything beneath it, and has
// no rule that takes a right away. So every rule whose directory holds a
// hidden path is replaced by rules on that directory's entries, descending
// only towards the hidden path: reading anything else stays allowed, the
// hidden directory itself gets no rule, and neither do the directories on
// the way to it (a command cannot list /, or the home directory, when the
// secrets are beneath them; it can read every entry in them). An entry
// created later in one of those directories is not readable by a command
// started before. Entries are opened without following symlinks: a symlink
// is judged where it leads, so one pointing at the secrets grants nothing.

// maxCarved bounds the rules one plan adds while carving (a hidden path
// below a directory with a huge number of entries must not make every
// command's start cost grow without bound); entries past it are not
// readable.
const maxCarved = 4096

// resolveHidden returns the real paths of the hidden directories: the
// existing part of each path with its symlinks resolved, plus what does not
// exist yet (which no rule can ever grant).
func resolveHidden(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		rest := ""
		cur := p
		for {
			real, err := filepath.EvalSymlinks(cur)
			if err == nil {
				out = append(out, filepath.Join(real, rest))
				break
			}
			parent := filepath.Dir(cur)
			if parent == cur {
				break
			}
			rest = filepath.Join(filepath.Base(cur), rest)
			cur = parent
		}
	}
	return out
}

// beneathPath reports whether path a is b or lies beneath it (both clean
// and absolute).
func beneathPath(a, b string) bool {
	return a == b || b == "/" || strings.HasPrefix(a, b+"/")
}

// fdPath is where an open descriptor's file is.
func fdPath(fd int) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
}

// hide replaces the rules that would grant something beneath a hidden path.
func (b *builder) hide(hidden []string) {
	if len(hidden) == 0 {
		return
	}
	rules := b.plan.rules
	b.plan.rules = nil
	for _, r := range rules {
		real, err := fdPath(r.fd)
		if err != nil || !filepath.IsAbs(real) {
			// Where it is cannot be told, so it cannot be told apart from
			// the secrets: it grants nothing.
			unix.Close(r.fd)
			b.skip("%s: where it is cannot be told (%v), so it grants nothing", r.name, err)
			continue
		}
		var inside []string
		covered := false
		for _, h := range hidden {
			if beneathPath(real, h) {
				covered = true
			} else if r.dir && beneathPath(h, real) {
				inside = append(inside, h)
			}
		}
		switch {
		case covered:
			unix.Close(r.fd)
			b.skip("%s: it is inside %s, which no command may reach", r.name, strings.Join(hidden, ", "))
		case len(inside) == 0:
			b.plan.rules = append(b.plan.rules, r)
		default:
			b.around(r, real, inside)
			unix.Close(r.fd)
		}
	}
}

// around adds rules for the entries of the directory of r (at real), except
// the hidden paths in avoid, descending into the entries that hold one.
func (b *builder) around(r pathRule, real string, avoid []string) {
	dfd, err := unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.skip("%s: %s cannot be listed (%v), so nothing in it is granted", r.name, real, err)
		return
	}
	d := os.NewFile(uintptr(dfd), real)
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		b.skip("%s: %s cannot be listed (%v), so nothing in it is granted", r.name, real, err)
		return
	}
	for _, name := range names {
		child := filepath.Join(real, name)
		var below []string
		skip := false
		for _, h := range avoid {
			if h == child {
				skip = true
			} else if beneathPath(h, child) {
				below = append(below, h)
			}
		}
		if skip {
			continue
		}
		if b.carved >= maxCarved {
			b.skip("%s: more than %d entries around %s; the rest of %s is not granted", r.name, maxCarved, strings.Join(avoid, ", "), real)
			return
		}
		fd, err := unix.Openat(r.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				b.skip("%s: %s: %v", r.name, child, err)
			}
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			continue
		}
		entry := pathRule{name: child, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, access: r.access}
		if len(below) > 0 && entry.dir {
			b.around(entry, child, below)
			unix.Close(fd)
			continue
		}
		b.carved++
		b.plan.rules = append(b.plan.rules, entry)
	}
}
