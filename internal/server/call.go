package server

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      wireMeta        `json:"_meta"`
	// InputResponses and RequestState carry a 2026-07-28 client's answer
	// to an InputRequiredResult (the retry of a multi-round-trip request).
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   *string                    `json:"requestState"`
}

func (s *Server) callTool(ctx context.Context, peer rpc.Peer, params json.RawMessage) (any, error) {
	var p callParams
	if err := wirejson.Unmarshal(orEmpty(params), &p); err != nil {
		return nil, rpc.NewError(rpc.CodeInvalidParams, "tools/call: "+TypeError("params", err))
	}
	m := &p.Meta
	ri, err := era(m)
	if err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, rpc.NewError(rpc.CodeInvalidParams, "tools/call: missing tool name")
	}
	if err := checkCallMeta(m); err != nil {
		return nil, err
	}
	req := engine.Request{Tool: p.Name, Args: p.Arguments,
		Meta: callctx.Meta{CallID: m.CallID, UnitID: m.UnitID, ProgressToken: m.ProgressToken}}
	if callIDPattern().MatchString(m.ToolUseID) {
		// The client's own name for the call; one that is not a short
		// token is not kept (it is only a cross-reference).
		req.Meta.ToolUseID = m.ToolUseID
	}
	if m.Traceparent != "" && validTraceparent(m.Traceparent) {
		req.Meta.Traceparent, req.Meta.Tracestate = m.Traceparent, m.Tracestate
	}
	if s.Trace != nil {
		ctx = trace.Begin(ctx, trace.Parent{Traceparent: req.Meta.Traceparent, Tracestate: req.Meta.Tracestate}, s.version(ri), p.Name)
	}
	if tok := m.ProgressToken; len(tok) > 0 && string(tok) != "null" {
		req.Progress = progressSender(ctx, peer, tok)
	}
	switch {
	case ri.perRequest:
		if p.RequestState != nil || p.InputResponses != nil || capsElicitForm(ri.caps) {
			req.RoundTrip = &engine.RoundTrip{
				CanAsk:    capsElicitForm(ri.caps),
				Responses: p.InputResponses,
			}
			if p.RequestState != nil {
				req.RoundTrip.State = *p.RequestState
				req.RoundTrip.Retry = true
			}
		}
	case s.formElicit.Load():
		req.Elicit = elicitor(peer)
	}
	out := s.Engine.Call(ctx, req)
	level := s.logLevel.Load()
	if ri.perRequest {
		level = ri.logLevel
	}
	return s.result(ctx, peer, out, ri.perRequest, level)
}

// elicitor asks the client's human through elicitation/create (a 2025
// client: a request of ours on the connection).
func elicitor(peer rpc.Peer) engine.ElicitFunc {
	return func(ctx context.Context, message string, schema any) (engine.Elicitation, error) {
		var ans engine.Elicitation
		err := peer.Call(ctx, "elicitation/create", map[string]any{"message": message, "requestedSchema": schema}, &ans)
		return ans, err
	}
}

// progressSender returns the ProgressFunc that sends notifications/progress
// for token (callctx passes it increasing values only).
func progressSender(ctx context.Context, peer rpc.Peer, token json.RawMessage) func(float64, float64, string) {
	return func(progress, total float64, message string) {
		n := map[string]any{"progressToken": token, "progress": progress}
		if total > 0 {
			n["total"] = total
		}
		if message != "" {
			n["message"] = message
		}
		_ = peer.Notify(ctx, "notifications/progress", n)
	}
}

// result maps an outcome to the wire: the one place that decides between a
// protocol error, an isError result and an input-required result.
func (s *Server) result(ctx context.Context, peer rpc.Peer, out *engine.Outcome, perRequest bool, logLevel int32) (any, error) {
	if out.Kind == fault.UnknownTool {
		return nil, rpc.NewError(rpc.CodeInvalidParams, out.Message)
	}
	if ir := out.InputRequired; ir != nil {
		return s.inputRequired(ir), nil
	}
	if out.IsError {
		s.clientLog(ctx, peer, out, logLevel)
		r := map[string]any{
			"content": []any{map[string]any{"type": "text", "text": out.Message}},
			"isError": true,
		}
		if perRequest {
			s.addPerRequestFields(r)
		}
		return r, nil
	}
	if raw := out.Result.Raw; len(raw) > 0 {
		if !perRequest {
			return raw, nil
		}
		var r map[string]any
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, err
		}
		meta, _ := r["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[MetaServerInfo] = s.serverInfo
		r["resultType"], r["_meta"] = "complete", meta
		return r, nil
	}
	return s.successResult(out.Result.Structured, perRequest), nil
}

// successResult encodes {content:[{type:text,text:S}], structuredContent:S,
// isError:false} for the structured JSON S directly (and, for a 2026-07-28
// request, resultType and the serverInfo _meta): this runs on every call,
// and S is already valid compact JSON.
func (s *Server) successResult(structured json.RawMessage, perRequest bool) json.RawMessage {
	text, _ := json.Marshal(string(structured))
	b := make([]byte, 0, 2*len(structured)+80+len(s.perRequestTail))
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = append(b, text...)
	b = append(b, `}],"structuredContent":`...)
	b = append(b, structured...)
	b = append(b, `,"isError":false`...)
	if perRequest {
		return append(b, s.perRequestTail...)
	}
	return append(b, '}')
}

// confirmInput is the key of the confirmation in inputRequests and
// inputResponses.
const confirmInput = engine.ConfirmInput

// inputRequired is the 2026-07-28 InputRequiredResult asking the human to
// confirm a call: one form elicitation, and the signed state the retry
// echoes.
func (s *Server) inputRequired(ir *engine.InputRequired) any {
	return map[string]any{
		"resultType": "input_required",
		"inputRequests": map[string]any{
			confirmInput: map[string]any{
				"method": "elicitation/create",
				"params": map[string]any{"mode": "form", "message": ir.Message, "requestedSchema": ir.Schema},
			},
		},
		"requestState": ir.State,
		"_meta":        map[string]any{MetaServerInfo: s.serverInfo},
	}
}

// clientLog sends a notifications/message about a failed call when the
// client asked for logs at that level (2025: logging/setLevel; 2026-07-28:
// the request's own _meta level).
func (s *Server) clientLog(ctx context.Context, peer rpc.Peer, out *engine.Outcome, set int32) {
	if set == 0 {
		return
	}
	level := "warning"
	if out.Status == audit.StatusError {
		level = "error"
	}
	if int32(slices.Index(logLevels, level))+1 < set {
		return
	}
	_ = peer.Notify(ctx, "notifications/message", map[string]any{
		"level": level, "logger": "toolhost",
		"data": map[string]any{"status": out.Status, "kind": out.Kind, "message": out.Message},
	})
}
