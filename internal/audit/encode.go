package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/toolhost/toolhost/internal/util/wirejson"
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
	dst = wirejson.AppendString(dst, r.CallID)
	dst = appendOptional(dst, `,"session_id":`, r.SessionID)
	dst = appendOptional(dst, `,"pid":`, r.ProjectID)
	dst = append(dst, `,"agent":`...)
	dst = wirejson.AppendString(dst, r.Agent)
	dst = appendOptional(dst, `,"unit_id":`, r.UnitID)
	dst = append(dst, `,"tool":`...)
	dst = wirejson.AppendString(dst, r.Tool)
	dst = appendOptional(dst, `,"source":`, r.Source)
	if len(r.Arguments) > 0 {
		dst = append(dst, `,"arguments":`...)
		dst = appendCompact(dst, r.Arguments)
	}
	dst = append(dst, `,"status":`...)
	dst = wirejson.AppendString(dst, string(r.Status))
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
		dst = wirejson.AppendString(dst, p.Action)
		dst = append(dst, `,"hash":`...)
		dst = wirejson.AppendString(dst, p.Hash)
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
	return wirejson.AppendString(append(dst, key...), s)
}

// appendCompact appends a JSON document without insignificant white space;
// a document that is not valid JSON is stored as a string instead, so the
// row stays valid whatever a caller passed.
func appendCompact(dst []byte, doc json.RawMessage) []byte {
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, doc); err != nil {
		return wirejson.AppendString(dst, string(doc))
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
