package fault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"unicode"
)

// Safe is an error whose Msg the model may read (like Tailscale's vizerror):
// its author wrote it for the model, in the tool's terms. Err, when set,
// is the error behind it, for the log only. Msg must never be built from an
// error's text: that is what Err is for.
type Safe struct {
	Msg string
	Err error
}

func (e *Safe) Error() string {
	if e.Err == nil {
		return e.Msg
	}
	return e.Msg + ": " + e.Err.Error()
}

func (e *Safe) Unwrap() error { return e.Err }

// Safef returns a Safe error with a formatted message.
func Safef(format string, args ...any) error {
	return &Safe{Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns err behind a message the model may read.
func Wrap(err error, format string, args ...any) error {
	return &Safe{Msg: fmt.Sprintf(format, args...), Err: err}
}

// CorruptFile is a stored document that does not parse. Path is relative
// to the project dir, Format names what it should be ("JSON"), Err is the
// parser's error (for the log: its text is not for the model).
type CorruptFile struct {
	Path   string
	Format string
	Err    error
}

func (e *CorruptFile) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s is not valid %s", e.Path, e.Format)
	}
	return fmt.Sprintf("%s is not valid %s: %v", e.Path, e.Format, e.Err)
}

func (e *CorruptFile) Unwrap() error { return e.Err }

// Content marks err as a parser's verdict on a document it was given (a
// contract, a Vitest report, an HTML page, a case file): a function that
// reads only the bytes it is handed writes about those bytes (a line, a
// field, a value), never about the machine, so Explain passes its text on,
// bounded and printable. Wrap only errors of such a function; an error that
// also holds an OS error is explained as the OS error.
func Content(err error) error {
	if err == nil {
		return nil
	}
	return &content{err}
}

type content struct{ err error }

func (e *content) Error() string { return e.err.Error() }
func (e *content) Unwrap() error { return e.err }

// Advice the model gets after a system error, by who can fix it.
const (
	adviceMachine = "this is a problem of the machine, not of the call: retrying will not help, tell a human and cite the error id"
	adviceRetry   = "the arguments may well be fine: call once more, and if it fails again tell a human and cite the error id"
)

// Explain is the one place that decides what the model reads about an
// error, wherever it ends up (the engine's message for a system error, the
// reason of a tool.Fail, a result field that reports a failure): the words
// of the first error class below that err's chain holds, never the text of
// err itself (an OS, JSON, network or library message may carry paths
// outside the project, addresses, secrets or noise; the log has it whole,
// under the error id). The classes, in order:
//
//   - a Rejection (sandbox, guard, validation, policy): its message,
//     written for the model;
//   - a Safe error: its message, written for the model;
//   - a CorruptFile: which file, that it was left as it is, how to repair it;
//   - an OS error (syscall.Errno): what the OS refused, in our words, and
//     the file it concerns when that name is relative to the project;
//   - a deadline inside the tool: it gave up waiting;
//   - a Content verdict (with no OS error in it): its text;
//   - anything else: an internal error.
//
// Each system error's words end with what the agent can do.
func Explain(err error) string {
	var rej Rejection
	var safe *Safe
	var corrupt *CorruptFile
	var errno syscall.Errno
	var verdict *content
	switch {
	case errors.As(err, &rej):
		return rej.Error()
	case errors.As(err, &safe):
		return safe.Msg
	case errors.As(err, &corrupt):
		return fmt.Sprintf("the file %s is corrupt (not valid %s) and was left as it is; repair it or move it away (or ask a human to), then call again",
			shown(corrupt.Path), corrupt.Format)
	case errors.As(err, &errno):
		what, machine := errnoWords(errno)
		if name := fileOf(err); name != "" {
			what = fmt.Sprintf("%s (%s)", what, name)
		}
		if machine {
			return what + "; " + adviceMachine
		}
		return what + "; " + adviceRetry
	case errors.Is(err, context.DeadlineExceeded):
		return "an operation inside the tool gave up waiting; " + adviceRetry
	case errors.As(err, &verdict):
		return shownText(verdict.Error())
	}
	return "an internal error; " + adviceRetry
}

// Withheld reports whether Explain's words for err stand in for text that
// only the log keeps (so the reader needs the error id to find it): false
// for a rejection, a Content verdict and a Safe error with nothing behind
// it, whose words are all there is.
func Withheld(err error) bool {
	var rej Rejection
	var safe *Safe
	var errno syscall.Errno
	var verdict *content
	switch {
	case errors.As(err, &rej):
		return false
	case errors.As(err, &safe):
		return safe.Err != nil
	case errors.As(err, &errno), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return !errors.As(err, &verdict)
}

// errnoWords says what an OS error means, and whether only a human at the
// machine can fix it.
func errnoWords(e syscall.Errno) (string, bool) {
	switch e {
	case syscall.ENOSPC, syscall.EDQUOT:
		return "the disk is full", true
	case syscall.EACCES, syscall.EPERM:
		return "the operating system does not let toolhost access a file", true
	case syscall.EROFS:
		return "the file system is read-only", true
	case syscall.EIO:
		return "the disk reported an I/O error", true
	case syscall.EMFILE, syscall.ENFILE:
		return "toolhost has too many files open", false
	case syscall.ENOENT:
		return "a file the tool needs does not exist", false
	case syscall.EEXIST:
		return "a file the tool creates already exists", false
	case syscall.EISDIR, syscall.ENOTDIR:
		return "a path names a directory where a file is needed, or a file where a directory is needed", false
	case syscall.ENAMETOOLONG:
		return "a file name is too long", false
	case syscall.ELOOP:
		return "a path goes through too many symlinks", false
	case syscall.EBUSY, syscall.ETXTBSY, syscall.EAGAIN:
		return "a file is busy", false
	case syscall.ECONNREFUSED:
		return "a connection was refused", false
	case syscall.ECONNRESET, syscall.EPIPE:
		return "a connection was closed by the other side", false
	case syscall.ETIMEDOUT:
		return "a connection timed out", false
	case syscall.EHOSTUNREACH, syscall.ENETUNREACH:
		return "a network address is unreachable", false
	}
	return "the operating system refused an operation", false
}

// fileOf returns the file an OS error concerns, when its name is relative
// and stays inside the directory it was opened from (toolhost opens
// project files through os.Root, which names them that way); an absolute
// name may point anywhere on the machine and is left to the log.
func fileOf(err error) string {
	var pe *fs.PathError
	if !errors.As(err, &pe) || path.IsAbs(pe.Path) || !fs.ValidPath(path.Clean(pe.Path)) {
		return ""
	}
	return shown(pe.Path)
}

// shown makes a name safe to quote: printable, and not unbounded.
func shown(name string) string { return bounded(name, 200, false) }

// shownText is shown for a parser's message, which may quote a few lines.
func shownText(msg string) string { return bounded(msg, 2000, true) }

func bounded(name string, maxShown int, lines bool) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) || lines && r == '\n' {
			return r
		}
		return '?'
	}, name)
	if r := []rune(name); len(r) > maxShown {
		name = string(r[:maxShown]) + "…"
	}
	return name
}
