package sandbox

import "os"

// OpenAppend opens p for reading and appending (created if missing, parent
// directories made) after the same checks as AppendFile, and returns the open
// file. It exists so a log file can be handed to a child process, which then
// writes to it directly; the caller closes its copy.
func (s *Sandbox) OpenAppend(p string) (*os.File, error) {
	t, err := s.planFile(p)
	if err != nil {
		return nil, err
	}
	dir, err := s.openDir(t.given, t.dir, true)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return s.openAppend(dir, t, os.O_RDWR)
}
