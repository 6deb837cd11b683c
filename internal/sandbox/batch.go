package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// File is one file of a WriteFiles batch.
type File struct {
	Path string
	Data []byte
}

// staged is a batch file whose content sits in a temp file next to its
// leaf, in dir; the batch holds the shared lock of each directory while its
// temp files exist, so RemoveStaleTemps never takes one for a dead write's.
type staged struct {
	t   target
	dir *os.Root
	tmp string
}

// WriteFiles writes several files as one decision: every path is checked
// against the allow-list and the tree before anything is created, so a
// refused path (or a symlink, a directory or a hard-linked leaf in the way)
// leaves every file of the batch as it was. Then every content is written
// and fsynced to a temp file beside its leaf, and only when all of them are
// on disk are the temp files renamed over the leaves, in the order given.
// A failure before the renames removes the temp files (directories the
// batch needed may stay, empty); a crash during the renames can leave the
// first files of the batch replaced and the rest not, so callers order a
// batch so that a prefix of it is harmless (an archive copy before the page
// it archives).
//
// A path given twice is refused: which of the two contents should win is the
// caller's decision.
func (s *Sandbox) WriteFiles(files []File) error {
	targets := make([]target, len(files))
	seen := make(map[string]bool, len(files))
	// Checked last to first, so a refusal names the last refused file: a
	// batch ends with the file the call is about (a page after its archive,
	// site.json after the pages it lists), which is also the crash order
	// callers need.
	for i := len(files) - 1; i >= 0; i-- {
		t, err := s.planFile(files[i].Path)
		if err != nil {
			return err
		}
		if seen[t.rel] {
			return fmt.Errorf("write batch names %s twice", t.rel)
		}
		seen[t.rel] = true
		targets[i] = t
	}
	// The tree as it is now, without creating anything: the whole batch is
	// refused before its first directory is made.
	for i := len(targets) - 1; i >= 0; i-- {
		t := targets[i]
		dir, err := s.openDir(t.given, t.dir, false)
		if err != nil {
			return err
		}
		if dir != nil {
			_, err = s.checkLeaf(dir, t)
			dir.Close()
			if err != nil {
				return err
			}
		}
	}
	// One open directory and one shared lock per directory of the batch,
	// not per file: a site's thousands of pages share one directory, and a
	// descriptor per file would run a large batch out of them.
	type held struct {
		dir    *os.Root
		unlock func()
	}
	dirs := map[string]held{}
	var done []staged
	cleanup := func() {
		for _, st := range done {
			if st.tmp != "" {
				_ = st.dir.Remove(st.tmp)
			}
		}
		for _, h := range dirs {
			h.unlock()
			h.dir.Close()
		}
	}
	for i, t := range targets {
		h, ok := dirs[t.dir]
		if !ok {
			dir, err := s.openDir(t.given, t.dir, true)
			if err != nil {
				cleanup()
				return err
			}
			unlock, err := s.lock(dirLockName(t.dir), unix.LOCK_SH)
			if err != nil {
				dir.Close()
				cleanup()
				return err
			}
			h = held{dir, unlock}
			dirs[t.dir] = h
		}
		tmp, err := s.writeTemp(h.dir, files[i].Data)
		done = append(done, staged{t: t, dir: h.dir, tmp: tmp})
		if err != nil {
			cleanup()
			return err
		}
	}
	for i, st := range done {
		// Checked again just before the rename, as replace does: a leaf that
		// became a directory or a symlink meanwhile is reported, not replaced.
		_, err := s.checkLeaf(st.dir, st.t)
		if err == nil {
			err = st.dir.Rename(st.tmp, st.t.leaf)
		}
		if err != nil {
			cleanup()
			if i > 0 {
				return fmt.Errorf("%w (the batch's first %d file(s) were already replaced)", err, i)
			}
			return err
		}
		done[i].tmp = ""
		syncDir(st.dir)
	}
	cleanup()
	return nil
}

// writeTemp writes data to a new fsynced temp file in dir and returns its
// name; on error nothing is left behind. The caller holds dir's shared lock.
func (s *Sandbox) writeTemp(dir *os.Root, data []byte) (string, error) {
	tmp, f, err := s.createTemp(dir)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = dir.Remove(tmp)
		return "", werr
	}
	return tmp, nil
}
