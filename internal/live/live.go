package live

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// Dir holds the locks, relative to the project dir.
const Dir = ".toolhost/live"

// Holder is a live subtree of an agent's confined commands.
type Holder struct {
	Agent string
	// PID is the holding process (the subtree's subreaper).
	PID int
}

// Hold records that agent's confined commands may run under this process
// for as long as the returned file stays open: an exclusive lock on
// Dir/<agent>.<pid>.lock. Close it (or exit) once the subtree is empty.
func Hold(projectDir, agent string) (*os.File, error) {
	if agent == "" || strings.ContainsAny(agent, "/.\x00") {
		return nil, fmt.Errorf("live: %q is not an agent name", agent)
	}
	root, err := os.OpenRoot(projectDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if err := root.MkdirAll(Dir, 0o755); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	name := path.Join(Dir, fmt.Sprintf("%s.%d.lock", agent, os.Getpid()))
	// A file of this name is a dead process's whose pid this one reuses.
	_ = root.Remove(name)
	f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("live: locking %s: %w", name, err)
	}
	return f, nil
}

// Running returns the holders whose lock is taken now; files whose lock is
// free (their process ended) are removed.
func Running(projectDir string) ([]Holder, error) {
	root, err := os.OpenRoot(projectDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.Open(Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, n := range names {
		base, ok := strings.CutSuffix(n, ".lock")
		i := strings.LastIndexByte(base, '.')
		if !ok || i <= 0 {
			continue
		}
		pid, err := strconv.Atoi(base[i+1:])
		if err != nil {
			continue
		}
		taken, err := lockTaken(root, path.Join(Dir, n))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		if taken {
			out = append(out, Holder{Agent: base[:i], PID: pid})
		}
	}
	return out, nil
}

// lockTaken tries the lock of name: taken by someone else, or free (then
// the stale file is removed, under the lock so a new holder of the same
// name is never removed).
func lockTaken(root *os.Root, name string) (bool, error) {
	f, err := root.OpenFile(name, os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	_ = root.Remove(name)
	return false, nil
}
