package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/procs"
)

// TempPrefix starts the name of every temp file an atomic write makes. The
// rest is "<pid>.<start ticks>-<random>": the writing process, named so that
// a later session can tell a temp file whose writer was killed from one
// still being written.
const TempPrefix = ".toolhost-tmp-"

// StaleTempAge is how old a temp file must be before RemoveStaleTemps
// considers it: a write holds one for milliseconds.
const StaleTempAge = time.Minute

// maxCleanEntries bounds the directory entries one RemoveStaleTemps looks
// at, so a huge tree cannot make a session start slow.
const maxCleanEntries = 200_000

// tempOwner names this process for temp file names: pid and start time
// (procs.Stat), which together never name another process.
func tempOwner() string {
	pid := os.Getpid()
	st, err := procs.ReadStat(pid)
	if err != nil {
		return strconv.Itoa(pid) + ".0"
	}
	return strconv.Itoa(pid) + "." + strconv.FormatUint(st.StartTicks, 10)
}

// tempWriterAlive reports whether the process named in a temp file's name
// is still running. A name without an owner (written by an older toolhost)
// has none alive.
func tempWriterAlive(name string) bool {
	rest := strings.TrimPrefix(name, TempPrefix)
	owner, _, ok := strings.Cut(rest, "-")
	if !ok {
		return false
	}
	pidS, ticksS, ok := strings.Cut(owner, ".")
	pid, err1 := strconv.Atoi(pidS)
	ticks, err2 := strconv.ParseUint(ticksS, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return false
	}
	if ticks == 0 {
		// The writer could not read its own start time: only the pid.
		return unix.Kill(pid, 0) == nil
	}
	return procs.Alive(pid, ticks)
}

func dirLockName(dir string) string { return "dir:" + dir }

// RemoveStaleTemps removes the temp files that writes killed mid-way left
// behind, in every directory this sandbox may write to: files named
// TempPrefix…, older than minAge, whose writing process is gone. Each
// directory is cleaned under its lock taken exclusively (writes hold it
// shared while their temp file exists), and one whose lock is busy is left
// for the next time. It returns how many files it removed; err is the
// first problem met (the walk goes on past it).
//
// The walk starts at each allow-list pattern's base and descends only into
// directories a pattern may hold files in, never into a symlink, a
// dot-directory no pattern names, or node_modules (the door never writes
// there). At most maxCleanEntries entries are looked at.
func (s *Sandbox) RemoveStaleTemps(minAge time.Duration, now time.Time) (removed int, err error) {
	w := &cleaner{s: s, cutoff: now.Add(-minAge), seen: map[string]bool{}}
	for _, r := range s.rules {
		root, oerr := s.openDir(r.base, r.base, false)
		if oerr != nil || root == nil {
			w.note(oerr)
			continue
		}
		w.walk(root, r.base)
		root.Close()
	}
	return w.removed, w.err
}

type cleaner struct {
	s       *Sandbox
	cutoff  time.Time
	seen    map[string]bool
	visited int
	removed int
	err     error
}

func (w *cleaner) note(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

func (w *cleaner) walk(dir *os.Root, rel string) {
	if w.seen[rel] || w.visited >= maxCleanEntries {
		return
	}
	w.seen[rel] = true
	d, err := dir.Open(".")
	if err != nil {
		w.note(err)
		return
	}
	ents, err := d.ReadDir(maxCleanEntries - w.visited)
	d.Close()
	w.visited += len(ents)
	if err != nil && !errors.Is(err, io.EOF) {
		w.note(err)
	}
	var temps []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, TempPrefix) && e.Type().IsRegular():
			temps = append(temps, name)
		case e.IsDir() && name != "node_modules":
			child := path.Join(rel, name)
			if !w.mayWriteIn(child) {
				continue
			}
			sub, err := w.s.step(dir, name, false)
			if err != nil || sub == nil {
				continue // a symlink or a swap: never followed
			}
			w.walk(sub, child)
			sub.Close()
		}
	}
	if len(temps) > 0 {
		w.clean(dir, rel, temps)
	}
}

// mayWriteIn reports whether some rule may put a file in or below c.
func (w *cleaner) mayWriteIn(c string) bool {
	comps := strings.Split(c, "/")
	for _, r := range w.s.rules {
		if r.mayContain(c) && undeclaredDotDir(r, comps) == "" {
			return true
		}
	}
	return false
}

func (w *cleaner) clean(dir *os.Root, rel string, temps []string) {
	unlock, err := w.s.lock(dirLockName(rel), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return // a write is in progress there: next time
	}
	if err != nil {
		w.note(err)
		return
	}
	defer unlock()
	for _, name := range temps {
		fi, err := dir.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(w.cutoff) || tempWriterAlive(name) {
			continue
		}
		if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.note(fmt.Errorf("remove %s: %w", path.Join(rel, name), err))
			continue
		}
		w.removed++
	}
}
