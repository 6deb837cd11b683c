package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/toolhost/toolhost/internal/fault"
	"golang.org/x/sys/unix"
)

// CheckWrite reports whether a write to p would be allowed and the absolute
// path it resolves to. It runs the same checks as a write, on the tree as it
// is now, without creating anything.
func (s *Sandbox) CheckWrite(p string) (string, error) {
	t, dir, err := s.openTarget(p, false)
	if err != nil {
		return "", err
	}
	if dir != nil {
		defer dir.Close()
		if _, err := s.checkLeaf(dir, t); err != nil {
			return "", err
		}
	}
	return filepath.Join(s.dir, filepath.FromSlash(t.rel)), nil
}

// CheckRead reports whether p may be read (any existing or missing path
// inside the project dir) and the absolute path it resolves to.
func (s *Sandbox) CheckRead(p string) (string, error) {
	c, err := s.clean(p)
	if err != nil {
		return "", readErr(err)
	}
	fi, err := s.root.Stat(c)
	switch {
	case isEscape(err):
		return "", readErr(s.violation(p, "it resolves outside the project dir through a symlink"))
	case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return "", err
	case err == nil && !fi.IsDir():
		if err := s.readProblem(p, fi); err != nil {
			return "", err
		}
	}
	resolved := filepath.Join(s.dir, filepath.FromSlash(c))
	if real, err := filepath.EvalSymlinks(resolved); err == nil {
		resolved = real
	}
	return resolved, nil
}

func readErr(err error) error {
	var se *Error
	if errors.As(err, &se) {
		se.Read = true
	}
	return err
}

// ReadFile reads a project-relative file; symlinks are followed only while
// they stay inside the project dir. Only a regular file is read (see
// openRead).
func (s *Sandbox) ReadFile(p string) ([]byte, error) {
	f, fi, err := s.openRead(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readWhole(f, fi.Size(), p)
}

// OpenRead opens a project-relative file for reading under ReadFile's
// rules, for a reader that streams it (the dashboard's documents); the
// caller closes it.
func (s *Sandbox) OpenRead(p string) (*os.File, fs.FileInfo, error) { return s.openRead(p) }

// MaxReadSize caps every whole-file read (ReadFile, and Update's read of
// the current content): a file an earlier step blew up (a 100 GB sparse
// file, say) must fail the tool with a clear error, not exhaust the
// daemon's memory.
const MaxReadSize = 256 << 20

// readWhole reads f, whose stat said size bytes, up to MaxReadSize; a file
// over the cap, or one that grows past it while being read, is an error
// naming p.
func readWhole(f *os.File, size int64, p string) ([]byte, error) {
	if size > MaxReadSize {
		return nil, fault.Safef("%s is %d bytes, over the %d-byte limit for files tools read whole", p, size, int64(MaxReadSize))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReadSize+1))
	if err == nil && len(b) > MaxReadSize {
		return nil, fault.Safef("%s grew over the %d-byte limit for files tools read whole", p, int64(MaxReadSize))
	}
	return b, err
}

// openRead opens a project-relative file for reading and returns it with its
// info. The open does not block (a FIFO left in the tree would otherwise hang
// it until a writer comes), and the opened file must be a regular file: a
// FIFO, socket or device is not a document. Hard links are read: a file with
// several links may be a name for a file outside the project, but in-project
// hard links (package managers make them) cannot be told apart from those.
func (s *Sandbox) openRead(p string) (*os.File, fs.FileInfo, error) {
	c, err := s.clean(p)
	if err != nil {
		return nil, nil, readErr(err)
	}
	f, err := s.root.OpenFile(c, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if isEscape(err) {
		return nil, nil, readErr(s.violation(p, "it resolves outside the project dir through a symlink"))
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = &fs.PathError{Op: "read", Path: c, Err: syscall.EISDIR}
	}
	if err == nil {
		err = s.readProblem(p, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readProblem refuses to read anything but a regular file.
func (s *Sandbox) readProblem(p string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return readErr(s.violation(p, "it is not a regular file (a FIFO, socket or device)"))
	}
	return nil
}

// MkdirAll creates a directory in which the allow-list permits files.
func (s *Sandbox) MkdirAll(p string) error {
	c, err := s.planDir(p)
	if err != nil {
		return err
	}
	dir, err := s.openDir(p, c, true)
	if err != nil {
		return err
	}
	return dir.Close()
}

// Remove removes a file inside the allow-list.
func (s *Sandbox) Remove(p string) error {
	t, dir, err := s.openTarget(p, false)
	if err != nil {
		return err
	}
	if dir == nil {
		return &fs.PathError{Op: "remove", Path: t.rel, Err: fs.ErrNotExist}
	}
	defer dir.Close()
	if _, err := s.checkLeaf(dir, t); err != nil {
		return err
	}
	return dir.Remove(t.leaf)
}

// WriteFile atomically replaces p with data.
func (s *Sandbox) WriteFile(p string, data []byte) error {
	t, dir, err := s.openTarget(p, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	if _, err := s.checkLeaf(dir, t); err != nil {
		return err
	}
	return s.replace(dir, t, data)
}

// WriteJSON writes v as indented JSON with a trailing newline.
func (s *Sandbox) WriteJSON(p string, v any) error {
	b, err := MarshalJSON(v)
	if err != nil {
		return err
	}
	return s.WriteFile(p, b)
}

// replace writes data to a new temp file in dir and renames it over the
// leaf. The temp file is created with O_EXCL (never through a symlink) and
// rename replaces whatever directory entry the leaf is at that moment, so
// nothing outside dir is ever opened for writing. The directory's lock is
// held shared while the temp file exists, so RemoveStaleTemps (which takes
// it exclusively) never removes a temp file of a write in progress.
func (s *Sandbox) replace(dir *os.Root, t target, data []byte) error {
	unlock, err := s.lock(dirLockName(t.dir), unix.LOCK_SH)
	if err != nil {
		return err
	}
	defer unlock()
	tmp, err := s.writeTemp(dir, data)
	if err != nil {
		return err
	}
	// Re-check just before the rename: a leaf that became a directory or a
	// symlink since the first check is reported, not replaced.
	_, err = s.checkLeaf(dir, t)
	if err == nil {
		err = dir.Rename(tmp, t.leaf)
	}
	if err != nil {
		_ = dir.Remove(tmp)
		return err
	}
	syncDir(dir)
	return nil
}

// createTemp creates a new temp file in dir, named for this process (see
// tempOwner) so that a cleanup can tell whether its writer is still alive.
func (s *Sandbox) createTemp(dir *os.Root) (string, *os.File, error) {
	for range 10 {
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		name := TempPrefix + s.owner + "-" + hex.EncodeToString(rnd[:])
		f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, errors.New("could not create a unique temp file")
}

func syncDir(dir *os.Root) {
	if d, err := dir.Open("."); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// AppendFile appends data (whole lines) to p, created if missing, all or
// nothing; see AppendLog.
func (s *Sandbox) AppendFile(p string, data []byte) error { return s.AppendLog(p, data, 0) }

func (s *Sandbox) openAppend(dir *os.Root, t target, access int) (*os.File, error) {
	var replaced error
	for range 3 {
		fi, err := s.checkLeaf(dir, t)
		if err != nil {
			return nil, err
		}
		// O_NONBLOCK: a leaf swapped for a FIFO must not hang the open.
		flag := access | os.O_APPEND | syscall.O_NONBLOCK
		if fi == nil {
			flag |= os.O_CREATE | os.O_EXCL
		}
		f, err := dir.OpenFile(t.leaf, flag, 0o644)
		if fi == nil && errors.Is(err, fs.ErrExist) || fi != nil && errors.Is(err, fs.ErrNotExist) {
			// Created or renamed away (a log rotated) by someone else
			// meanwhile: inspect what is there now.
			continue
		}
		if err != nil {
			if isEscape(err) {
				return nil, s.violation(t.given, t.rel+" resolves outside the allowed directory")
			}
			return nil, err
		}
		if err := s.sameLeaf(dir, t, f); err != nil {
			f.Close()
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errLeafReplaced) {
				// Renamed away, or replaced, after the open (a log rotated
				// and started anew): open what is there now.
				replaced = err
				continue
			}
			return nil, err
		}
		return f, nil
	}
	if replaced != nil {
		return nil, s.leafErr(t, replaced)
	}
	return nil, fault.Safef("append %s: the file keeps changing; retry", t.rel)
}

// errLeafReplaced is sameLeaf's answer when the file opened is no longer
// the one at the leaf.
var errLeafReplaced = errors.New("replaced while it was being opened")

// leafErr is what a caller reports of sameLeaf's error: a replaced leaf
// is a violation.
func (s *Sandbox) leafErr(t target, err error) error {
	if errors.Is(err, errLeafReplaced) {
		return s.violation(t.given, t.rel+" was replaced while it was being opened; retry")
	}
	return err
}

// sameLeaf verifies that f is the regular, single-link file now at the leaf
// (errLeafReplaced when another file is there now).
func (s *Sandbox) sameLeaf(dir *os.Root, t target, f *os.File) error {
	opened, err := f.Stat()
	if err != nil {
		return err
	}
	now, err := dir.Lstat(t.leaf)
	if err != nil {
		return err
	}
	if err := s.leafProblem(t, now); err != nil {
		return err
	}
	if err := s.leafProblem(t, opened); err != nil {
		return err
	}
	if !os.SameFile(opened, now) {
		return errLeafReplaced
	}
	return nil
}

// Rename moves the file from to the path to; both must be writable, from
// must be a regular single-link file, and to (if it exists) is replaced.
func (s *Sandbox) Rename(from, to string) error {
	src, err := s.planFile(from)
	if err != nil {
		return err
	}
	dst, err := s.planFile(to)
	if err != nil {
		return err
	}
	sdir, err := s.openDir(src.given, src.dir, false)
	if err != nil {
		return err
	}
	if sdir == nil {
		return &fs.PathError{Op: "rename", Path: src.rel, Err: fs.ErrNotExist}
	}
	defer sdir.Close()
	fi, err := s.checkLeaf(sdir, src)
	if err != nil {
		return err
	}
	if fi == nil {
		return &fs.PathError{Op: "rename", Path: src.rel, Err: fs.ErrNotExist}
	}
	// Within one directory the source's root serves the destination too:
	// walking the same path again would only give the check and the rename
	// two different handles.
	ddir := sdir
	if dst.dir != src.dir {
		if ddir, err = s.openDir(dst.given, dst.dir, true); err != nil {
			return err
		}
		defer ddir.Close()
	}
	if _, err := s.checkLeaf(ddir, dst); err != nil {
		return err
	}
	if src.dir == dst.dir {
		err = sdir.Rename(src.leaf, dst.leaf)
	} else {
		err = renameAcross(sdir, src.leaf, ddir, dst.leaf)
	}
	if err != nil {
		return err
	}
	syncDir(ddir)
	return nil
}

// renameAcross renames between two directories opened by openDir, using
// their descriptors so no path is resolved again.
func renameAcross(from *os.Root, oldLeaf string, to *os.Root, newLeaf string) error {
	fd, err := from.Open(".")
	if err != nil {
		return err
	}
	defer fd.Close()
	td, err := to.Open(".")
	if err != nil {
		return err
	}
	defer td.Close()
	if err := unix.Renameat(int(fd.Fd()), oldLeaf, int(td.Fd()), newLeaf); err != nil {
		return &os.LinkError{Op: "rename", Old: oldLeaf, New: newLeaf, Err: err}
	}
	return nil
}

// Lock takes the named cross-process lock (flock on a file under LocksDir).
// The lock dir is toolhost's own; it is opened with the same component walk
// as a write, whatever the allow-list says.
func (s *Sandbox) Lock(name string) (func(), error) { return s.lock(name, unix.LOCK_EX) }

// lock takes the named lock in mode LOCK_EX or LOCK_SH (blocking), or with
// LOCK_NB added fails at once with unix.EWOULDBLOCK when it is held. The
// goroutines of this process that take the same lock pass its gate first,
// so at most one of them (one per reader for LOCK_SH) waits in flock(2),
// which holds an OS thread while it waits: a burst of calls on one lock
// (every timeline_append takes "timeline") waits on a Go lock instead,
// holding none.
func (s *Sandbox) lock(name string, mode int) (func(), error) {
	pass, err := s.gates.enter(name, mode)
	if err != nil {
		return nil, err
	}
	f, err := s.openLockFile(name)
	if err != nil {
		pass()
		return nil, err
	}
	if err := flock(f, mode); err != nil {
		f.Close()
		pass()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		_ = f.Close()
		pass()
	}, nil
}

// lockGates are the in-process gates of the named locks, each kept while
// a goroutine holds or waits for it.
type lockGates struct {
	mu sync.Mutex
	m  map[string]*lockGate
}

type lockGate struct {
	rw   sync.RWMutex
	refs int
}

// enter passes the gate of name in mode (shared for LOCK_SH, at once or
// EWOULDBLOCK with LOCK_NB) and returns the function that leaves it.
func (g *lockGates) enter(name string, mode int) (func(), error) {
	g.mu.Lock()
	gt := g.m[name]
	if gt == nil {
		gt = &lockGate{}
		g.m[name] = gt
	}
	gt.refs++
	g.mu.Unlock()
	drop := func() {
		g.mu.Lock()
		if gt.refs--; gt.refs == 0 {
			delete(g.m, name)
		}
		g.mu.Unlock()
	}
	shared := mode&^unix.LOCK_NB == unix.LOCK_SH
	switch {
	case mode&unix.LOCK_NB != 0 && shared:
		if !gt.rw.TryRLock() {
			drop()
			return nil, unix.EWOULDBLOCK
		}
	case mode&unix.LOCK_NB != 0:
		if !gt.rw.TryLock() {
			drop()
			return nil, unix.EWOULDBLOCK
		}
	case shared:
		gt.rw.RLock()
	default:
		gt.rw.Lock()
	}
	return func() {
		if shared {
			gt.rw.RUnlock()
		} else {
			gt.rw.Unlock()
		}
		drop()
	}, nil
}

func flock(f *os.File, mode int) error {
	for {
		err := unix.Flock(int(f.Fd()), mode)
		if err != unix.EINTR {
			return err
		}
	}
}

// openLockFile opens (creating) the file that stands for the lock name.
func (s *Sandbox) openLockFile(name string) (*os.File, error) {
	dir, err := s.openDir(LocksDir, LocksDir, true)
	if err != nil {
		return nil, fmt.Errorf("create lock dir: %w", err)
	}
	defer dir.Close()
	safe := strings.NewReplacer("/", "_", "\\", "_", "..", "_", "\x00", "_").Replace(name)
	if len(safe) > 200 {
		// Keep the file name under NAME_MAX for long paths.
		sum := sha256.Sum256([]byte(name))
		safe = safe[:100] + "-" + hex.EncodeToString(sum[:8])
	}
	safe += ".lock"
	f, err := dir.OpenFile(safe, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fault.Safef("lock %s: %s/%s is not a regular file; remove it", name, LocksDir, safe)
	}
	return f, nil
}

// Locker is a cross-process lock whose file stays open, for a path that
// takes it on every call (the audit sink): Lock and Unlock are one flock(2)
// each. It serialises processes, not goroutines: callers hold their own
// mutex around it.
type Locker struct {
	f      *os.File
	shared []byte
}

// Locker opens the named lock (the same lock Lock(name) takes) for repeated
// use; Close releases the file.
func (s *Sandbox) Locker(name string) (*Locker, error) {
	f, err := s.openLockFile(name)
	if err != nil {
		return nil, err
	}
	return &Locker{f: f}, nil
}

// Lock blocks until the lock is held.
func (l *Locker) Lock() error { return flock(l.f, unix.LOCK_EX) }

// Unlock releases it.
func (l *Locker) Unlock() { _ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN) }

// SharedWords is how many words of memory Shared gives.
const SharedWords = 8

// Shared returns words of memory shared by every process that uses this
// lock: the lock file's first page, mapped. Processes use them to tell the
// holder something without a system call (the audit sink: how many
// processes wait for the lock). Their meaning is the caller's; a new lock
// file holds zeros.
func (l *Locker) Shared() (*[SharedWords]atomic.Uint64, error) {
	if l.shared == nil {
		page := os.Getpagesize()
		fi, err := l.f.Stat()
		if err != nil {
			return nil, err
		}
		// Extending to a page is the same for every process (a file of
		// that size is left as it is), so no lock is needed for it.
		if fi.Size() < int64(page) {
			if err := l.f.Truncate(int64(page)); err != nil {
				return nil, err
			}
		}
		m, err := unix.Mmap(int(l.f.Fd()), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return nil, err
		}
		l.shared = m
	}
	return (*[SharedWords]atomic.Uint64)(unsafe.Pointer(&l.shared[0])), nil
}

// Close releases the lock file (and the lock, if held).
func (l *Locker) Close() error {
	if l.shared != nil {
		_ = unix.Munmap(l.shared)
		l.shared = nil
	}
	return l.f.Close()
}

// Update runs fn on the current content of p under p's lock and writes the
// result atomically. fn receives nil when p does not exist; returning nil
// bytes and nil error leaves the file untouched.
func (s *Sandbox) Update(p string, fn func(old []byte) ([]byte, error)) error {
	t, dir, err := s.openTarget(p, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	// Refuse a bad leaf before creating its lock file; check again under
	// the lock, where it counts.
	if _, err := s.checkLeaf(dir, t); err != nil {
		return err
	}
	unlock, err := s.Lock(t.rel)
	if err != nil {
		return err
	}
	defer unlock()
	fi, err := s.checkLeaf(dir, t)
	if err != nil {
		return err
	}
	var old []byte
	if fi != nil {
		if old, err = s.readLeaf(dir, t, p, fi.Size()); err != nil {
			return err
		}
	}
	next, err := fn(old)
	if err != nil || next == nil {
		return err
	}
	return s.replace(dir, t, next)
}

func (s *Sandbox) readLeaf(dir *os.Root, t target, p string, size int64) ([]byte, error) {
	f, err := dir.OpenFile(t.leaf, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := s.sameLeaf(dir, t, f); err != nil {
		return nil, s.leafErr(t, err)
	}
	return readWhole(f, size, p)
}
