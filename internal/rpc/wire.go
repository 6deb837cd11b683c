package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/toolhost/toolhost/internal/util/wirejson"
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

// Error is a protocol error with a JSON-RPC code.
type Error struct {
	Code    int64            `json:"code"`
	Message string           `json:"message"`
	Data    *json.RawMessage `json:"data,omitempty"`
	// Kind is what sort of refusal the error is, for a transport that
	// answers sorts differently (Streamable HTTP chooses its status from
	// it); stdio ignores it.
	Kind Kind `json:"-"`
}

// Kind sorts protocol errors by what went wrong with the request, not by
// how a transport answers them.
type Kind uint8

const (
	// KindAnswer is an ordinary error, answered in the response's body.
	KindAnswer Kind = iota
	// KindUnknownMethod is a method the revision the request speaks does
	// not define (a 2026-07-28 request).
	KindUnknownMethod
	// KindBadRequest is a request that cannot be served as sent: a
	// revision the server does not speak, a required per-request field
	// missing, transport headers that disagree with the body.
	KindBadRequest
	// KindOverloaded is a request past the server's bound on requests in
	// flight (CodeOverloaded): the same request is served once one of
	// them is answered.
	KindOverloaded
)

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// NewError returns a protocol error.
func NewError(code int64, msg string) *Error { return &Error{Code: code, Message: msg} }

// Message is any JSON-RPC 2.0 message, decoded once. The id stays raw so it
// is echoed byte for byte.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

// Request is one client request as a Handler receives it.
type Request struct {
	// ID is the request's id as the client wrote it.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// Decode parses one framed message into m with the envelope rules every
// transport applies: valid JSON, an object (no batches), "jsonrpc":"2.0",
// and an id that can be answered faithfully. A message that is refused
// returns the error to answer it with and the id to put in that answer
// (nil when it cannot be read, written as null).
func Decode(msg []byte, m *Message) (json.RawMessage, *Error) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return nil, NewError(CodeInvalidRequest, "invalid request: the message is empty")
	}
	if msg[0] == '[' {
		return nil, NewError(CodeInvalidRequest, "JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per line")
	}
	var probe struct {
		ID      json.RawMessage `json:"id"`
		JSONRPC string          `json:"jsonrpc"`
	}
	if err := wirejson.Unmarshal(msg, m); err != nil {
		if !json.Valid(msg) {
			return nil, NewError(CodeParseError, "parse error: the message is not valid JSON")
		}
		if msg[0] != '{' {
			return nil, NewError(CodeInvalidRequest, "invalid request: a JSON-RPC message must be an object")
		}
		_ = json.Unmarshal(msg, &probe)
		return answerableID(probe.ID), NewError(CodeInvalidRequest, "invalid request: "+err.Error())
	}
	// The version is checked on the decoded member, never by looking for
	// the text: "jsonrpc":"2.0" inside params proves nothing.
	if m.JSONRPC != "2.0" {
		return answerableID(m.ID), NewError(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if suspectID(msg) {
		if id, reason := badRequestID(msg); reason != "" {
			return id, NewError(CodeInvalidRequest, "invalid request: "+reason)
		}
	}
	return nil, nil
}

// answerableID is id when it may be echoed (a string or an integer),
// else nil.
func answerableID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nil
	}
	switch c := id[0]; {
	case c == '"':
		return id
	case c == '-' || (c >= '0' && c <= '9'):
		if _, err := strconv.ParseInt(string(id), 10, 64); err == nil {
			return id
		}
	}
	return nil
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
	if reason := idProblem(p.ID); reason != "" {
		if c := p.ID[0]; c == '-' || (c >= '0' && c <= '9') {
			return p.ID, reason
		}
		return nil, reason
	}
	return nil, ""
}

// idProblem says why id cannot be taken as a request id ("" when it can).
func idProblem(id json.RawMessage) string {
	const want = `"id" must be a string or a non-negative integer`
	switch c := id[0]; {
	case c == '"':
		return ""
	case c == '-' || (c >= '0' && c <= '9'):
		if n, err := strconv.ParseInt(string(id), 10, 64); err == nil && n >= 0 {
			return ""
		}
		return want
	case c == 'n':
		return `"id" must not be null (send a notification without an id instead)`
	}
	return want
}

// LeadingID reads the id of a request from the start of a message that is
// too large to be read whole: the members before "id" must be complete in
// prefix. It returns nil when the id cannot be read there or could not be
// answered as it is.
func LeadingID(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			// A number at the very end of prefix may go on past it.
			if len(v) == 0 || idProblem(v) != "" || dec.InputOffset() >= int64(len(prefix)) {
				return nil
			}
			return v
		}
	}
	return nil
}

// appendResponse appends {"jsonrpc":"2.0","id":ID<member>BODY} to dst,
// member being `,"result":` or `,"error":`: the one envelope every response
// leaves in.
func appendResponse(dst []byte, id json.RawMessage, member string, body []byte) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, member...)
	dst = append(dst, body...)
	return append(dst, '}')
}

// EncodeError returns the error response to id (null when nil).
func EncodeError(id json.RawMessage, e *Error) []byte {
	eb, err := json.Marshal(e)
	if err != nil {
		eb = []byte(`{"code":-32603,"message":"internal error: the error could not be encoded"}`)
	}
	return appendResponse(make([]byte, 0, len(eb)+len(id)+40), id, `,"error":`, eb)
}

// EncodeResult returns the result response to id; a json.RawMessage result
// (the tools/call hot path) is written as is.
func EncodeResult(id json.RawMessage, result any) ([]byte, *Error) {
	var body []byte
	switch r := result.(type) {
	case json.RawMessage:
		body = r
	default:
		b, err := json.Marshal(result)
		if err != nil {
			return nil, NewError(CodeInternalError, "encode result: "+err.Error())
		}
		body = b
	}
	if len(body) == 0 {
		body = []byte("null")
	}
	return appendResponse(make([]byte, 0, len(body)+len(id)+40), id, `,"result":`, body), nil
}

// EncodeNotification returns a notification message.
func EncodeNotification(method string, params any) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", method, params})
}

// ToWire maps an error to a JSON-RPC error: the one place codes are
// decided. A *Error (possibly wrapped) keeps its code, anything else is
// -32603 with its text.
func ToWire(err error) *Error {
	var je *Error
	if errors.As(err, &je) {
		return je
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}
