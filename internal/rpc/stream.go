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

// JSON-RPC error codes used on the wire.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeShuttingDown   = -32000
)

// DefaultMaxMessage is the largest message accepted (4 MiB).
const DefaultMaxMessage = 4 << 20

var errTooLarge = errors.New("message too large")

// stream implements jsonrpc2.ObjectStream. Unlike the library's streams it
// never returns an error for a bad message: it answers it and reads on, so a
// malformed line cannot end the session.
type stream struct {
	r      *bufio.Reader
	w      io.Writer
	closer io.Closer
	lsp    bool
	max    int

	wmu sync.Mutex
	// onEOF runs when input ends, before ReadObject reports EOF to the
	// connection (which then closes): it drains in-flight calls.
	onEOF func()
}

func newStream(r io.Reader, w io.Writer, c io.Closer, lsp bool, max int, onEOF func()) *stream {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	return &stream{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: c, lsp: lsp, max: max, onEOF: onEOF}
}

// WriteObject writes one message. jsonrpc2's messages marshal themselves
// into compact JSON already; calling MarshalJSON directly saves the extra
// validate-and-compact pass json.Marshal would make over every response.
func (s *stream) WriteObject(obj any) error {
	var b []byte
	var err error
	if m, ok := obj.(json.Marshaler); ok {
		b, err = m.MarshalJSON()
	} else {
		b, err = json.Marshal(obj)
	}
	if err != nil {
		return err
	}
	return s.writeRaw(b)
}

func (s *stream) writeRaw(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.lsp {
		if _, err := fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", len(b)); err != nil {
			return err
		}
		_, err := s.w.Write(b)
		return err
	}
	buf := make([]byte, 0, len(b)+1)
	buf = append(append(buf, b...), '\n')
	_, err := s.w.Write(buf)
	return err
}

// Close closes the output.
func (s *stream) Close() error {
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// writeError answers a message the connection will never see.
func (s *stream) writeError(id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg},
	})
	_ = s.writeRaw(b)
}

// ReadObject reads the next well-formed message into v.
func (s *stream) ReadObject(v any) error {
	for {
		msg, err := s.next()
		switch {
		case errors.Is(err, errTooLarge):
			s.writeError(nil, CodeInvalidRequest, fmt.Sprintf("message exceeds the %d-byte limit; send smaller arguments (large content belongs in a file referenced by path)", s.max))
			continue
		case err == io.EOF:
			if s.onEOF != nil {
				s.onEOF()
			}
			return io.EOF
		case err != nil:
			var pe *frameError
			if errors.As(err, &pe) {
				s.writeError(nil, CodeParseError, pe.Error())
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
			s.writeError(nil, CodeInvalidRequest, "JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per line")
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
					s.writeError(nil, CodeParseError, "parse error: the message is not valid JSON")
				} else {
					s.writeError(nil, CodeInvalidRequest, "invalid request: a JSON-RPC message must be an object")
				}
				continue
			}
			if probe.JSONRPC != "2.0" {
				s.writeError(probe.ID, CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
				continue
			}
		}
		if err := json.Unmarshal(msg, v); err != nil {
			if !json.Valid(msg) {
				s.writeError(nil, CodeParseError, "parse error: the message is not valid JSON")
				continue
			}
			_ = json.Unmarshal(msg, &probe)
			s.writeError(probe.ID, CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		return nil
	}
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

func (s *stream) nextLSP() ([]byte, error) {
	length := -1
	sawHeader := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && !sawHeader {
				return nil, io.EOF
			}
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, err
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
			return nil, &frameError{msg: fmt.Sprintf("parse error: bad header line %q", line)}
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, &frameError{msg: fmt.Sprintf("parse error: bad Content-Length %q", value)}
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
