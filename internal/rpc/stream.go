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

	"github.com/toolhost/toolhost/internal/wirejson"
)

// JSON-RPC error codes used on the wire.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeShuttingDown   = -32000
	CodeOverloaded     = -32001
)

// DefaultMaxInFlight is the default cap on requests running at once.
const DefaultMaxInFlight = 10000

// DefaultMaxMessage is the largest message accepted (4 MiB).
const DefaultMaxMessage = 4 << 20

var errTooLarge = errors.New("message too large")

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

// writeRaw writes one message (a complete JSON object) with its framing.
func (s *stream) writeRaw(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var buf []byte
	if s.lsp {
		buf = fmt.Appendf(make([]byte, 0, len(b)+32), "Content-Length: %d\r\n\r\n", len(b))
	} else {
		buf = make([]byte, 0, len(b)+1)
	}
	buf = append(buf, b...)
	if !s.lsp {
		buf = append(buf, '\n')
	}
	_, err := s.w.Write(buf)
	if err != nil {
		s.failedOnce.Do(func() { close(s.failed) })
	}
	return err
}

// writeError writes a JSON-RPC error response; a message that is not served
// at all (malformed, oversized…) is answered with a null id.
func (s *stream) writeError(id json.RawMessage, e *Error) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	eb, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return s.writeResponse(id, `,"error":`, eb)
}

// writeResponse writes {"jsonrpc":"2.0","id":ID<member>BODY}, member being
// `,"result":` or `,"error":`: the one envelope every response leaves in.
func (s *stream) writeResponse(id json.RawMessage, member string, body []byte) error {
	b := make([]byte, 0, len(body)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, member...)
	b = append(b, body...)
	b = append(b, '}')
	return s.writeRaw(b)
}

// ReadObject reads the next well-formed message into v; at the end of input
// it runs onEOF (the drain) and returns io.EOF.
func (s *stream) ReadObject(v any) error {
	for {
		msg, err := s.next()
		switch {
		case errors.Is(err, errTooLarge):
			_ = s.writeError(nil, NewError(CodeInvalidRequest, fmt.Sprintf("message exceeds the %d-byte limit; send smaller arguments (large content belongs in a file referenced by path)", s.max)))
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
		msg = bytes.TrimSpace(msg)
		if len(msg) == 0 {
			continue
		}
		if msg[0] == '[' {
			_ = s.writeError(nil, NewError(CodeInvalidRequest, "JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per line"))
			continue
		}
		var probe struct {
			ID      json.RawMessage `json:"id"`
			JSONRPC string          `json:"jsonrpc"`
		}
		// Well-formed messages carry "jsonrpc":"2.0" literally; only the
		// others pay for a second decode that finds out what is wrong.
		if !bytes.Contains(msg, []byte(`"jsonrpc":"2.0"`)) && !bytes.Contains(msg, []byte(`"jsonrpc": "2.0"`)) {
			if err := json.Unmarshal(msg, &probe); err != nil {
				if !json.Valid(msg) {
					_ = s.writeError(nil, NewError(CodeParseError, "parse error: the message is not valid JSON"))
				} else {
					_ = s.writeError(nil, NewError(CodeInvalidRequest, "invalid request: a JSON-RPC message must be an object"))
				}
				continue
			}
			if probe.JSONRPC != "2.0" {
				_ = s.writeError(probe.ID, NewError(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`))
				continue
			}
		}
		if suspectID(msg) {
			if id, reason := badRequestID(msg); reason != "" {
				_ = s.writeError(id, NewError(CodeInvalidRequest, "invalid request: "+reason))
				continue
			}
		}
		if err := wirejson.Unmarshal(msg, v); err != nil {
			if !json.Valid(msg) {
				_ = s.writeError(nil, NewError(CodeParseError, "parse error: the message is not valid JSON"))
				continue
			}
			_ = json.Unmarshal(msg, &probe)
			_ = s.writeError(probe.ID, NewError(CodeInvalidRequest, "invalid request: "+err.Error()))
			continue
		}
		return nil
	}
}

// suspectID is a cheap scan: false when msg has no \u escape and every
// "id" key in it is followed by a string or by a short run of digits (the
// ids that are plainly valid), so well-formed messages skip the decode
// of badRequestID.
func suspectID(msg []byte) bool {
	if bytes.Contains(msg, []byte(`\u`)) {
		return true // a key may spell "id" with escapes
	}
	for rest := msg; ; {
		i := bytes.Index(rest, []byte(`"id"`))
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+4:], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		if len(rest) == 0 {
			return true
		}
		switch c := rest[0]; {
		case c == '"':
			continue
		case c >= '0' && c <= '9':
			n := 0
			for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
				n++
			}
			if n >= 19 || (n < len(rest) && (rest[n] == '.' || rest[n] == 'e' || rest[n] == 'E')) {
				return true
			}
		default:
			return true
		}
	}
}

// badRequestID returns why a request's id is refused (MCP ids are strings or
// integers and never null; toolhost takes strings and non-negative integers: a negative id would be
// answered as a huge positive one, and a null id taken for a notification
// and run without an answer, which MCP forbids), and the id to put in the
// error: the id itself when it is a number, else null. Messages without a
// method (responses) are left to the dispatcher.
func badRequestID(msg []byte) (json.RawMessage, string) {
	var p struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(msg, &p) != nil || len(p.Method) == 0 || len(p.ID) == 0 {
		return nil, ""
	}
	const want = `"id" must be a string or a non-negative integer`
	switch c := p.ID[0]; {
	case c == '"':
		return nil, ""
	case c == '-' || (c >= '0' && c <= '9'):
		if n, err := strconv.ParseInt(string(p.ID), 10, 64); err == nil && n >= 0 {
			return nil, ""
		}
		return p.ID, want
	case c == 'n':
		return nil, `"id" must not be null (send a notification without an id instead)`
	}
	return nil, want
}

type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

// next returns the next raw message, discarding oversized ones whole.
func (s *stream) next() ([]byte, error) {
	if s.lsp {
		return s.nextLSP()
	}
	var buf []byte
	tooLarge := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		if !tooLarge {
			if len(buf)+len(chunk) > s.max+2 {
				tooLarge, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLarge {
				return nil, errTooLarge
			}
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			if tooLarge {
				return nil, errTooLarge
			}
			if len(bytes.TrimSpace(buf)) > 0 {
				return buf, nil
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
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
		if _, err := io.CopyN(io.Discard, s.r, int64(length)); err != nil {
			return nil, err
		}
		return nil, errTooLarge
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
