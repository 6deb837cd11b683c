package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/util/lazyre"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// Protocol revisions. A 2026-07-28 request names its revision in its own
// _meta; a 2025 client negotiates one in initialize.
const (
	// PerRequestVersion is the revision that carries version, capabilities and client
	// identity in every request's _meta (no initialize, no sessions).
	PerRequestVersion = "2026-07-28"
)

// SupportedVersions are the MCP protocol revisions served, newest first.
var SupportedVersions = []string{PerRequestVersion, "2025-11-25", "2025-06-18", "2025-03-26"}

// negotiatedVersions are the revisions negotiated with initialize.
var negotiatedVersions = SupportedVersions[1:]

// The error codes the 2026-07-28 revision defines (-32020…-32022).
const (
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022
)

// Keys of the per-request protocol fields in _meta.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// wireMeta is a request's _meta as far as toolhost reads it: the 2026-07-28
// protocol fields, the trace context and toolhost's own call fields. The
// client's self-reported identity (clientInfo) is not read: the spec says
// not to act on it, and skipping it saves an allocation per call.
type wireMeta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	LogLevel           *string         `json:"io.modelcontextprotocol/logLevel"`
	Traceparent        string          `json:"traceparent"`
	Tracestate         string          `json:"tracestate"`
	CallID             string          `json:"call_id"`
	UnitID             string          `json:"unit_id"`
	ProgressToken      json.RawMessage `json:"progressToken"`
	// ToolUseID is Claude Code's name for the call: the model's tool_use
	// id, which its PreToolUse hooks get too.
	ToolUseID string `json:"claudecode/toolUseId"`
}

// reqInfo is what a request says about the revision it speaks.
type reqInfo struct {
	// perRequest is set for a request that carries the 2026-07-28 fields.
	perRequest bool
	caps       json.RawMessage
	// logLevel is the level of notifications/message the request asked for
	// (index into logLevels, plus one); zero sends none.
	logLevel int32
}

// era decides how a request is served: a request naming a 2026-07-28 revision
// in _meta is served statelessly by that revision (and must carry the
// required fields), one without it (or naming a 2025 revision) by the
// 2025 rules. An unknown revision is UnsupportedProtocolVersion.
func era(m *wireMeta) (reqInfo, error) {
	v := m.ProtocolVersion
	switch {
	case v == "" || slices.Contains(negotiatedVersions, v):
		return reqInfo{}, nil
	case v != PerRequestVersion:
		return reqInfo{}, unsupportedVersion(v)
	}
	caps := bytes.TrimSpace(m.ClientCapabilities)
	if len(caps) == 0 || caps[0] != '{' {
		return reqInfo{}, missingMeta(fmt.Sprintf("_meta %q must be an object (the client's capabilities for this request; {} for none)", MetaClientCapabilities))
	}
	ri := reqInfo{perRequest: true, caps: caps}
	if m.LogLevel != nil {
		i := slices.Index(logLevels, *m.LogLevel)
		if i < 0 {
			return reqInfo{}, &rpc.Error{Code: rpc.CodeInvalidParams, Message: fmt.Sprintf("_meta %q must be one of %s", MetaLogLevel, strings.Join(logLevels, ", "))}
		}
		ri.logLevel = int32(i) + 1
	}
	return ri, nil
}

// unsupportedVersion is the error the spec defines for a revision this
// server does not speak, listing the ones it does.
func unsupportedVersion(requested string) *rpc.Error {
	data, _ := json.Marshal(map[string]any{"supported": SupportedVersions, "requested": requested})
	raw := json.RawMessage(data)
	return &rpc.Error{Code: CodeUnsupportedProtocolVersion, Kind: rpc.KindBadRequest, Data: &raw,
		Message: fmt.Sprintf("Unsupported protocol version %q: this server speaks %s", requested, strings.Join(SupportedVersions, ", "))}
}

// missingMeta is a 2026-07-28 request without a required _meta field: invalid
// params, a bad request.
func missingMeta(detail string) *rpc.Error {
	return &rpc.Error{Code: rpc.CodeInvalidParams, Kind: rpc.KindBadRequest, Message: "invalid params: " + detail}
}

// metaOnly decodes the _meta of params that carry nothing else toolhost reads.
func metaOnly(params json.RawMessage) (*wireMeta, error) {
	var p struct {
		Meta wireMeta `json:"_meta"`
	}
	if len(params) > 0 && string(params) != "null" {
		if err := wirejson.Unmarshal(params, &p); err != nil {
			return nil, rpc.NewError(rpc.CodeInvalidParams, TypeError("params", err))
		}
	}
	return &p.Meta, nil
}

// ProtocolVersionOf returns the revision a request's params name in
// _meta ("" when none): what a transport needs to know before it frames
// the request (which headers to check, sessions or not).
func ProtocolVersionOf(params json.RawMessage) string {
	m, err := metaOnly(params)
	if err != nil {
		return ""
	}
	return m.ProtocolVersion
}

// IsPerRequest reports whether v is a revision served per request.
func IsPerRequest(v string) bool { return v == PerRequestVersion }

// callIDPattern is the rule a client-given call id follows: the MCP rule
// for tool names. The id lands in audit rows, events and the timeline, so
// it must stay a short token.
var callIDPattern = lazyre.New(`^[A-Za-z0-9_.-]{1,128}$`)

// checkCallMeta refuses toolhost's own _meta fields that cannot be used as
// they are, at the protocol boundary, before anything is recorded.
func checkCallMeta(m *wireMeta) error {
	if m.CallID != "" && !callIDPattern().MatchString(m.CallID) {
		return rpc.NewError(rpc.CodeInvalidParams, "tools/call: _meta.call_id must be 1-128 letters, digits, '_', '-' or '.' (it names the call in the audit log); "+describe(m.CallID, 128))
	}
	if m.UnitID != "" && !callctx.ValidUnit(m.UnitID) {
		return rpc.NewError(rpc.CodeInvalidParams, "tools/call: _meta.unit_id must be 1-64 letters, digits, '-', '_' or '.' and not . or .. (it names the unit's directory); "+describe(m.UnitID, 64))
	}
	return nil
}

// describe says what is wrong with a refused id without echoing it whole.
func describe(s string, maxLen int) string {
	if len(s) > maxLen {
		return fmt.Sprintf("this one is %d bytes long", len(s))
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			if r == utf8.RuneError {
				return "this one is not valid UTF-8"
			}
			return fmt.Sprintf("this one contains %q", r)
		}
	}
	return fmt.Sprintf("%q is not allowed", s)
}

// traceparentPattern is the W3C Trace Context traceparent header format.
var traceparentPattern = lazyre.New(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// validTraceparent reports whether tp is a traceparent W3C Trace Context
// lets a receiver use; an invalid one is ignored, as that spec says.
func validTraceparent(tp string) bool {
	if !traceparentPattern().MatchString(tp) || strings.HasPrefix(tp, "ff") {
		return false
	}
	return tp[3:35] != strings.Repeat("0", 32) && tp[36:52] != strings.Repeat("0", 16)
}

// formElicitation reports whether the elicitation capability a client
// declared lets it answer form-mode elicitation/create: an empty object
// (every revision) or one naming "form" (2025-11-25, where a client may
// offer only "url"). An absent capability (or null) does not.
func formElicitation(elicitation json.RawMessage) bool {
	var modes map[string]json.RawMessage
	if json.Unmarshal(elicitation, &modes) != nil || modes == nil {
		return false
	}
	_, form := modes["form"]
	return len(modes) == 0 || form
}

// capsElicitForm reports whether a 2026-07-28 request's clientCapabilities
// declare form elicitation.
func capsElicitForm(caps json.RawMessage) bool {
	if !bytes.Contains(caps, []byte(`"elicitation"`)) {
		return false
	}
	var c struct {
		Elicitation json.RawMessage `json:"elicitation"`
	}
	return json.Unmarshal(caps, &c) == nil && formElicitation(c.Elicitation)
}
