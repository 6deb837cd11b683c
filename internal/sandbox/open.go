package sandbox

import (
	"os"
	"path"
)

// OpenAppend opens p for reading and appending (created if missing, parent
// directories made) after the same checks as AppendFile, and returns the open
// file. It exists so a log file can be handed to a child process, which then
// writes to it directly; the caller closes its copy.
func (s *Sandbox) OpenAppend(p string) (*os.File, error) {
	c, err := s.check(p)
	if err != nil {
		return nil, err
	}
	if dir := path.Dir(c); dir != "." {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	return s.root.OpenFile(c, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
}
