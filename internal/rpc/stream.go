package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// DefaultMaxInFlight is the default bound on requests in flight (of a
// stdio session; of all the connections of an HTTP server). An agent's
// client has a few in flight; the bound is what keeps a client that sends
// without waiting from starting one goroutine, and in a blocking file
// call one OS thread, per request (a burst of 60,000 once passed Go's
// 10,000-thread limit and killed the process).
const DefaultMaxInFlight = 256

// DefaultMaxMessage is the largest message accepted (4 MiB).
const DefaultMaxMessage = 4 << 20

// leadKeep is how much of an oversized message is kept to read its id
// from: the members before "id" (jsonrpc, method) are short.
const leadKeep = 4 << 10

// stream reads and writes framed messages. It never returns an error for a
// bad message: it answers it and reads on, so a malformed line cannot end
// the session.
type stream struct {
	r   *bufio.Reader
	w   io.Writer
	lsp bool
	max int

	wmu sync.Mutex
	// failed is closed on the first write error: the client can no longer
	// receive anything (a closed stdout), so the session must end.
	failed     chan struct{}
	failedOnce sync.Once
	// resync is set after a malformed LSP header block: the length of the
	// body that follows is unknown, so input is skipped up to the next
	// Content-Length header.
	resync bool
	// onEOF runs when input ends, before ReadObject reports EOF to the
	// connection (which then closes): it drains in-flight calls.
	onEOF func()
}

func newStream(r io.Reader, w io.Writer, lsp bool, max int, onEOF func()) *stream {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	return &stream{r: bufio.NewReaderSize(r, 64<<10), w: w, lsp: lsp, max: max, onEOF: onEOF, failed: make(chan struct{})}
}

// writeRaw writes one message (a complete JSON object) with its framing,
// in one write. A newline-framed message is written from b itself, the
// newline in b's spare capacity when it has some (EncodeResult leaves it).
func (s *stream) writeRaw(b []byte) error {
	var buf []byte
	if s.lsp {
		buf = fmt.Appendf(make([]byte, 0, len(b)+32), "Content-Length: %d\r\n\r\n", len(b))
		buf = append(buf, b...)
	} else {
		buf = append(b, '\n')
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.w.Write(buf)
	if err != nil {
		s.failedOnce.Do(func() { close(s.failed) })
	}
	return err
}

// writeError writes a JSON-RPC error response; a message that is not served
// at all (malformed, oversized…) is answered with a null id.
func (s *stream) writeError(id json.RawMessage, e *Error) error {
	return s.writeRaw(EncodeError(id, e))
}

// Send implements Sink: the stream carries every message of the session.
func (s *stream) Send(b []byte) error { return s.writeRaw(b) }

// Reply implements Sink; a request that ends without an answer (cancelled
// by the client) writes nothing.
func (s *stream) Reply(b []byte, _ *Error) error {
	if b == nil {
		return nil
	}
	return s.writeRaw(b)
}

// ReadObject reads the next well-formed message into m, answering the
// malformed ones itself; at the end of input it runs onEOF (the drain) and
// returns io.EOF.
func (s *stream) ReadObject(m *Message) error {
	for {
		msg, err := s.next()
		var tl *tooLargeError
		switch {
		case errors.As(err, &tl):
			_ = s.writeError(LeadingID(tl.lead), NewError(CodeInvalidRequest, fmt.Sprintf("message exceeds the %d-byte limit; send smaller arguments (large content belongs in a file referenced by path)", s.max)))
			continue
		case err == io.EOF:
			if s.onEOF != nil {
				s.onEOF()
			}
			return io.EOF
		case err != nil:
			var pe *frameError
			if errors.As(err, &pe) {
				_ = s.writeError(nil, NewError(CodeParseError, pe.Error()))
				continue
			}
			if s.onEOF != nil {
				s.onEOF()
			}
			return err
		}
		if len(bytes.TrimSpace(msg)) == 0 {
			continue
		}
		*m = Message{}
		if id, e := Decode(msg, m); e != nil {
			_ = s.writeError(id, e)
			continue
		}
		return nil
	}
}

type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

// tooLargeError is a message over the cap, discarded whole; lead is its
// start, to answer it with its id.
type tooLargeError struct{ lead []byte }

func (e *tooLargeError) Error() string { return "message too large" }

// next returns the next raw message, discarding oversized ones whole. The
// cap counts the message itself, not the line ending after it.
func (s *stream) next() ([]byte, error) {
	if s.lsp {
		return s.nextLSP()
	}
	var buf, lead []byte
	tooLarge := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		if !tooLarge {
			if len(buf)+len(chunk) > s.max+len("\r\n") {
				tooLarge = true
				lead = append(buf, chunk[:min(len(chunk), max(0, leadKeep-len(buf)))]...)
				if len(lead) > leadKeep {
					lead = lead[:leadKeep]
				}
				buf = nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil, err == io.EOF && (tooLarge || len(bytes.TrimSpace(buf)) > 0):
			if !tooLarge && len(trimEOL(buf)) > s.max {
				tooLarge, lead = true, buf[:min(len(buf), leadKeep)]
			}
			if tooLarge {
				return nil, &tooLargeError{lead: lead}
			}
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// trimEOL drops the line ending ("\n" or "\r\n") from a framed line.
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// maxHeaderLine bounds one LSP header line.
const maxHeaderLine = 4 << 10

var errLongHeader = &frameError{msg: fmt.Sprintf("parse error: header line longer than %d bytes", maxHeaderLine)}

// headerLine reads one line of at most maxHeaderLine bytes; a longer one is
// discarded through its newline and reported as errLongHeader. While
// resynchronising it keeps the last maxHeaderLine bytes of a long line
// instead: the unknown body before the next header has no newline of its
// own, so that header ends the line.
func (s *stream) headerLine() (string, error) {
	var line []byte
	long := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		switch {
		case long:
		case len(line)+len(chunk) <= maxHeaderLine:
			line = append(line, chunk...)
		case s.resync:
			line = append(line, chunk...)
			line = append(line[:0], line[len(line)-maxHeaderLine:]...)
		default:
			long, line = true, nil
		}
		switch {
		case err == nil:
			if long {
				return "", errLongHeader
			}
			return string(line), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return "", err
		}
	}
}

// quote shows the start of a bad header line in an error message.
func quote(line string) string {
	if len(line) > 64 {
		return strconv.Quote(line[:64]) + "..."
	}
	return strconv.Quote(line)
}

func (s *stream) nextLSP() ([]byte, error) {
	msg, err := s.frameLSP()
	var fe *frameError
	if errors.As(err, &fe) {
		s.resync = true
	}
	return msg, err
}

func (s *stream) frameLSP() ([]byte, error) {
	length := -1
	sawHeader := false
	for {
		line, err := s.headerLine()
		if err != nil {
			return nil, err
		}
		if s.resync {
			i := strings.Index(strings.ToLower(line), "content-length:")
			if i < 0 {
				continue
			}
			line, s.resync = line[i:], false
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !sawHeader {
				continue
			}
			break
		}
		sawHeader = true
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, &frameError{msg: "parse error: bad header line " + quote(line)}
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, &frameError{msg: "parse error: bad Content-Length " + quote(value)}
			}
			length = n
		}
	}
	if length < 0 {
		return nil, &frameError{msg: "parse error: missing Content-Length header"}
	}
	if length > s.max {
		lead := make([]byte, min(length, leadKeep))
		if _, err := io.ReadFull(s.r, lead); err != nil {
			return nil, err
		}
		if _, err := io.CopyN(io.Discard, s.r, int64(length-len(lead))); err != nil {
			return nil, err
		}
		return nil, &tooLargeError{lead: lead}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, io.EOF
		}
		return nil, err
	}
	return body, nil
}
