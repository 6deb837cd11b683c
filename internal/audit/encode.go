package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends r as one line of JSON (without the newline) to dst.
// It writes what json.Marshal would, field for field, without reflection
// and without the allocations of the generic encoder: it runs once per call.
// Arguments must be valid JSON (RedactArguments makes them so); they are
// compacted, so a document with line breaks still yields one line.
func (r *Row) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"ts":"`...)
	dst = r.TS.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","call_id":`...)
	dst = appendString(dst, r.CallID)
	dst = appendOptional(dst, `,"session_id":`, r.SessionID)
	dst = appendOptional(dst, `,"pid":`, r.ProjectID)
	dst = append(dst, `,"agent":`...)
	dst = appendString(dst, r.Agent)
	dst = appendOptional(dst, `,"unit_id":`, r.UnitID)
	dst = append(dst, `,"tool":`...)
	dst = appendString(dst, r.Tool)
	dst = appendOptional(dst, `,"source":`, r.Source)
	if len(r.Arguments) > 0 {
		dst = append(dst, `,"arguments":`...)
		dst = appendCompact(dst, r.Arguments)
	}
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, string(r.Status))
	dst = appendOptional(dst, `,"error_kind":`, r.ErrorKind)
	dst = appendOptional(dst, `,"rule":`, r.Rule)
	dst = appendOptional(dst, `,"error":`, r.Error)
	dst = appendOptional(dst, `,"error_id":`, r.ErrorID)
	dst = append(dst, `,"retry_count":`...)
	dst = strconv.AppendInt(dst, int64(r.RetryCount), 10)
	dst = append(dst, `,"duration_ms":`...)
	dst = appendFloat(dst, r.DurationMS)
	dst = appendOptional(dst, `,"sandbox":`, r.Sandbox)
	dst = appendOptional(dst, `,"traceparent":`, r.Traceparent)
	dst = appendOptional(dst, `,"client_session_id":`, r.ClientSessionID)
	dst = appendOptional(dst, `,"client_agent_id":`, r.ClientAgentID)
	dst = appendOptional(dst, `,"tool_use_id":`, r.ToolUseID)
	if p := r.Pin; p != nil {
		dst = append(dst, `,"pin":{"action":`...)
		dst = appendString(dst, p.Action)
		dst = append(dst, `,"hash":`...)
		dst = appendString(dst, p.Hash)
		dst = appendOptional(dst, `,"pinned":`, p.Pinned)
		dst = appendOptional(dst, `,"change":`, p.Change)
		dst = append(dst, '}')
	}
	if r.Seq != 0 {
		dst = appendChain(dst, r.Seq, r.Prev)
	}
	return append(dst, '}')
}

// appendChain appends the chain fields every line of the trail ends with.
func appendChain(dst []byte, seq int64, prev string) []byte {
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"prev":"`...)
	dst = append(dst, prev...)
	return append(dst, '"')
}

// MarshalJSON makes json.Marshal of a row use AppendJSON.
func (r *Row) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(nil), nil
}

func appendOptional(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendString(append(dst, key...), s)
}

// appendCompact appends a JSON document without insignificant white space;
// a document that is not valid JSON is stored as a string instead, so the
// row stays valid whatever a caller passed.
func appendCompact(dst []byte, doc json.RawMessage) []byte {
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, doc); err != nil {
		return appendString(dst, string(doc))
	}
	return buf.Bytes()
}

// appendFloat encodes f as encoding/json does: plain notation, exponent
// only for very small or very large magnitudes.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(dst, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json does
// (HTML characters, U+2028/U+2029 and invalid UTF-8 included).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
