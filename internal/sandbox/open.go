package sandbox

import (
	"errors"
	"io"
	"os"
)

// OpenAppend opens p for reading and appending (created if missing, parent
// directories made) after the same checks as AppendFile, and returns the open
// file. It exists so a log file can be handed to a child process, which then
// writes to it directly; the caller closes its copy.
func (s *Sandbox) OpenAppend(p string) (*os.File, error) {
	t, dir, err := s.openTarget(p, true)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return s.openAppend(dir, t, os.O_RDWR)
}

// ReadTail reads at most the last n bytes of a project-relative file, with
// the same rules as ReadFile. Logs that only grow (the timeline) are read
// this way so that reading their end costs the same at any size.
func (s *Sandbox) ReadTail(p string, n int64) ([]byte, error) {
	f, fi, err := s.openRead(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	off := max(fi.Size()-n, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf, nil
}
