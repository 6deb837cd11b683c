// Package local names the state toolhost keeps on each machine, whatever
// store holds the project's shared state: the units the integrator
// started (their process groups) and the port reservations, in the
// project's .toolhost/ — a directory no agent's allow-list or command may
// write — so every directory an agent's allow-list names (integration/
// for the integrator) is wholly the agent's.
//
// Migrate moves the files of a project written before they lived here.
// It must never be run after a command of the session could have run: the
// old place is in the integrator's directory, which commands may write.
package local

import (
	"errors"
	"fmt"
	"io/fs"
)

// Where the machine-local records live, relative to the project dir.
const (
	UnitsPath = ".toolhost/units.json"
	PortsPath = ".toolhost/ports.json"
)

// formerly maps each record to where toolhost kept it before it moved.
var formerly = map[string]string{
	UnitsPath: "integration/units.json",
	PortsPath: "integration/ports.json",
}

// MigrationAllowList is the allow-list of the door Migrate needs: the new
// places and the old ones (to remove a file once it moved).
func MigrationAllowList() []string {
	allow := []string{".toolhost/**"}
	for _, was := range formerly {
		allow = append(allow, was)
	}
	return allow
}

// Door is what Migrate writes through (a door with MigrationAllowList).
type Door interface {
	ReadFile(rel string) ([]byte, error)
	Update(rel string, fn func(old []byte) ([]byte, error)) error
	Remove(rel string) error
}

// Migrate makes sure every machine-local record is at its place: a record
// still at its old place is moved to the new one, and the new file is
// created (empty when there was nothing to move) so that the old place is
// never read again — a file a command writes there later is only the
// integrator's. Run it when a session opens, before any tool runs.
func Migrate(d Door) error {
	for now, was := range formerly {
		moved := false
		err := d.Update(now, func(cur []byte) ([]byte, error) {
			if cur != nil {
				return nil, nil // already here: nothing to write
			}
			b, err := d.ReadFile(was)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return []byte("{}\n"), nil
			case err != nil:
				return nil, fmt.Errorf("read %s to move it to %s: %w", was, now, err)
			}
			moved = true
			return b, nil
		})
		if err != nil {
			return err
		}
		if moved {
			if err := d.Remove(was); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s after moving it to %s: %w", was, now, err)
			}
		}
	}
	return nil
}
