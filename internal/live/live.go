package live

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// Dir holds the locks, relative to the project dir.
const Dir = ".toolhost/live"

// Entry is one subtree of confined commands that may still run.
type Entry struct {
	// Agent is whose commands they are (an agent's name, or "upstream X").
	Agent string `json:"agent"`
	// Unit is set for a unit spawn_units started.
	Unit string `json:"unit,omitempty"`
	// PID is the holding process (the subtree's subreaper); 0 until it has
	// announced itself.
	PID int `json:"pid,omitempty"`
	// Write are the project-relative directories beneath which the
	// commands may create, remove or rename entries, as the kernel
	// enforces it ("." for the whole project). nil: not recorded (a
	// `toolhost confine --hold` holder, whose agent's allow-list says it).
	Write []string `json:"write"`
}

// What names the entry for a message: "unit web of agent X", "a command
// of agent X".
func (e Entry) What() string {
	if e.Unit != "" {
		return fmt.Sprintf("unit %s of %s", e.Unit, e.Agent)
	}
	return "a command of " + e.Agent
}

// Register records e for as long as the returned file stays open in any
// process: an exclusive lock on a new file Dir/<agent>.<random>.lock that
// holds e. The caller hands the file to the process that holds the subtree
// (which then announces its pid with Announce) and closes its own copy.
// The file only appears under its .lock name once it is locked, so a
// reader never takes a registration being made for a stale one.
func Register(projectDir string, e Entry) (*os.File, error) {
	if e.Agent == "" || strings.ContainsAny(e.Agent, "/\x00") {
		return nil, fmt.Errorf("live: %q is not an agent name", e.Agent)
	}
	root, err := os.OpenRoot(projectDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if err := root.MkdirAll(Dir, 0o755); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	// A reader removes a .new file whose lock is free: one it found before
	// this process locked it is gone, and this process tries again.
	for range 3 {
		var id [8]byte
		_, _ = rand.Read(id[:])
		base := path.Join(Dir, strings.ReplaceAll(e.Agent, " ", "_")+"."+hex.EncodeToString(id[:]))
		f, err := root.OpenFile(base+".new", os.O_CREATE|os.O_EXCL|os.O_RDWR|os.O_APPEND|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("live: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			f.Close()
			return nil, fmt.Errorf("live: %w", err)
		}
		if err := root.Rename(base+".new", base+".lock"); err != nil {
			f.Close()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("live: %w", err)
		}
		return f, nil
	}
	return nil, errors.New("live: the registration kept being removed")
}

// Hold records that agent's confined commands may run under this process
// for as long as the returned file stays open (`toolhost confine --hold`). Close it
// (or exit) once the subtree is empty.
func Hold(projectDir, agent string) (*os.File, error) {
	return Register(projectDir, Entry{Agent: agent, PID: os.Getpid()})
}

// Announce adds the holding process's pid to the registration it holds
// (written to the descriptor it inherited: no path is opened).
func Announce(f *os.File, pid int) error {
	line, err := json.Marshal(map[string]int{"pid": pid})
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return err
}

// Running returns the entries whose lock is taken now; files whose lock is
// free (their process ended) are removed.
func Running(projectDir string) ([]Entry, error) {
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
	var out []Entry
	for _, n := range names {
		registering := strings.HasSuffix(n, ".new")
		if !registering && !strings.HasSuffix(n, ".lock") {
			continue
		}
		e, taken, err := readTaken(root, path.Join(Dir, n))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		// A registration still being made is not running yet: its
		// command starts only after the rename.
		if taken && !registering {
			out = append(out, e)
		}
	}
	return out, nil
}

// readTaken tries the lock of name: taken by someone else (then its entry
// is read), or free (then the stale file is removed, under the lock so a
// new holder of the same name is never removed).
func readTaken(root *os.Root, name string) (Entry, bool, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Entry{}, false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_ = root.Remove(name)
		return Entry{}, false, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return Entry{}, false, err
	}
	// Lines are merged in order: the registration, then the holder's pid.
	var e Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_ = json.Unmarshal(sc.Bytes(), &e)
	}
	if e.Agent == "" {
		// Only a registration writes here; an entry without an agent is
		// still somebody's running subtree.
		e.Agent = "an unknown agent"
	}
	return e, true, sc.Err()
}
