package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/visible"
)

// ElicitFunc asks the human through the client (MCP elicitation/create,
// form mode) and returns the client's answer.
type ElicitFunc func(ctx context.Context, message string, requestedSchema any) (Elicitation, error)

// Elicitation is the client's answer to elicitation/create.
type Elicitation struct {
	// Action is accept, decline or cancel.
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// confirmSchema is the requestedSchema of a confirmation: one optional
// boolean, so any form-capable client can render it; accepting the form
// runs the call unless the human unticked confirm.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"confirm": map[string]any{
			"type":        "boolean",
			"title":       "Run this call",
			"description": "Accept to run the tool call shown above; decline or cancel to refuse it.",
			"default":     true,
		},
	},
}

// ConfirmInput is the key of the confirmation in a 2026-07-28
// InputRequiredResult's inputRequests and in the retry's inputResponses.
const ConfirmInput = "confirm"

// RoundTrip is the confirmation state of a 2026-07-28 request: the human
// is asked through an InputRequiredResult, and the client retries the call
// with the answer (SEP-2322, multi round-trip requests).
type RoundTrip struct {
	// CanAsk is set when the request declared form elicitation.
	CanAsk bool
	// Retry is set when the request carries a requestState (State).
	Retry bool
	State string
	// Responses are the retry's inputResponses by key.
	Responses map[string]json.RawMessage
}

// InputRequired is the answer to a call that waits for the human: the
// question and the signed state the client's retry must echo. It ends the
// pipeline like a rejection, but the client gets an InputRequiredResult,
// not an error.
type InputRequired struct {
	Message string
	Schema  any
	State   string
}

func (e *InputRequired) Error() string { return "waiting for a human to confirm: " + e.Message }

// RejectionKind implements fault.Rejection.
func (e *InputRequired) RejectionKind() fault.Kind { return fault.InputRequired }

// ConfirmationError is a call a human did not (or not yet) confirm.
type ConfirmationError struct {
	// Kind is fault.NeedsConfirmation, UserDeclined, UserDenied,
	// RequestStateInvalid or ConfirmationFailed.
	Kind fault.Kind
	Msg  string
}

func (e *ConfirmationError) Error() string { return e.Msg }

// RejectionKind implements fault.Rejection: needs_confirmation,
// user_declined, user_denied, request_state_invalid or
// confirmation_failed.
func (e *ConfirmationError) RejectionKind() fault.Kind { return e.Kind }

// confirm asks a human before a tool whose policy says confirm runs. It sits
// after validation, so an invalid call is never shown to a human, and
// before injection and execution. It is the one place a confirmation is
// decided, whichever way the human is reached: MCP elicitation (a 2025
// client), an InputRequiredResult and its retry (a 2026-07-28 client), or
// `toolhost approve` for a client that cannot ask (or whose human did not
// decide).
func (e *Engine) confirm(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		if !c.Decision.Confirm {
			return next(ctx, c)
		}
		preview, err := previewOf(c)
		if err != nil {
			return err
		}
		call := confirm.Call{
			SessionID: e.Identity.SessionID, Agent: e.Identity.Agent, Tool: c.Tool, CallID: c.Meta.CallID,
			Args: c.Args, Preview: preview, TTL: c.Decision.ConfirmTTL,
		}
		rt := c.RoundTrip
		if rt != nil && (rt.Retry || len(rt.Responses) > 0) {
			return e.roundTripAnswer(ctx, c, next, call, preview)
		}
		if (rt != nil && rt.CanAsk) || c.Elicit != nil {
			// A decision made with `toolhost approve` (after a client that
			// asked got no decision) is used before the human is asked again.
			if e.Confirm != nil {
				res, err := e.Confirm.Take(ctx, call)
				if err != nil {
					return storeFailure(c, err)
				}
				switch res.Verdict {
				case confirm.Run:
					return next(ctx, c)
				case confirm.Deny:
					return denied(c, res.Entry.ID)
				}
			}
			if rt != nil {
				return e.askRoundTrip(ctx, c, preview)
			}
			ans, err := c.Elicit(ctx, e.confirmMessage(c, preview), confirmSchema)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err != nil:
				return &ConfirmationError{Kind: fault.ConfirmationFailed, Msg: fmt.Sprintf(
					"%s needs a human to confirm it, but asking the client failed (%v); call it again", c.Tool, err)}
			}
			return e.decide(ctx, c, next, call, ans)
		}
		return e.approve(ctx, c, next, call, "")
	}
}

// maxPreview bounds the arguments a human is asked to decide on: a call
// whose arguments are larger cannot be shown whole, and is not asked about.
const maxPreview = 256 << 10

// previewOf is what a human decides on: the call's arguments whole, the
// commands it would run (shell scripts, argv words, their environment)
// exactly as written, and elsewhere only plain secrets hidden
// (redact.PreviewJSON), so that the human reads what will run. Arguments
// too large to show are refused: nobody can decide on what they cannot read.
func previewOf(c *Call) (json.RawMessage, error) {
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if len(args) > maxPreview {
		return nil, &ConfirmationError{Kind: fault.ConfirmationFailed, Msg: fmt.Sprintf(
			"%s needs a human to confirm it and was not run: its arguments are %d bytes, more than a human can be shown (%d); "+
				"put large content in a file the call reads, so what is asked about stays readable", visible.Line(c.Tool), len(args), maxPreview)}
	}
	verbatim := map[string]bool{}
	if commands := c.Entry.Spec.Commands; commands != nil {
		for _, cmd := range commands(args) {
			verbatim[cmd.Script] = true
			for _, a := range cmd.Argv {
				verbatim[a] = true
			}
			for _, v := range cmd.Env {
				verbatim[v] = true
			}
		}
	}
	delete(verbatim, "")
	return redact.PreviewJSON(args, func(s string) bool { return verbatim[s] }), nil
}

// decide acts on the human's answer: accept runs the call, decline (or a
// form whose confirm box was unticked) refuses it, and cancel — the client
// dismissed the question without anyone deciding, as a headless client
// does — falls back to `toolhost approve`.
func (e *Engine) decide(ctx context.Context, c *Call, next Handler, call confirm.Call, ans Elicitation) error {
	switch {
	case ans.Action == "accept" && ans.Content["confirm"] != false:
		return next(ctx, c)
	case ans.Action == "accept" || ans.Action == "decline":
		return &ConfirmationError{Kind: fault.UserDeclined, Msg: fmt.Sprintf(
			"declined by user: the human declined %s with these arguments; do not repeat the same call, ask the user what to change", c.Tool)}
	}
	return e.approve(ctx, c, next, call, fmt.Sprintf("nobody decided in the client (it answered %q), so a human must decide with toolhost approve. ", ans.Action))
}

// storeFailure is the answer to a call the confirmation store could not
// decide: a session id another agent holds is the operator's setup to fix
// and is said so; anything else is a system error.
func storeFailure(c *Call, err error) error {
	var taken *confirm.SessionTakenError
	if errors.As(err, &taken) {
		return &ConfirmationError{Kind: fault.ConfirmationFailed, Msg: fmt.Sprintf(
			"%s needs a human to confirm it and was not run: %v", c.Tool, taken)}
	}
	return fmt.Errorf("confirmation store: %w", err)
}

func denied(c *Call, id string) error {
	return &ConfirmationError{Kind: fault.UserDenied, Msg: fmt.Sprintf(
		"denied by user: a human denied %s with these arguments (confirmation %s); do not repeat the same call, ask the user what to change", c.Tool, id)}
}

// binding is what a request state of this call is bound to.
func (e *Engine) binding(c *Call, argsHash string) confirm.Binding {
	return confirm.Binding{Tool: c.Tool, ArgsHash: argsHash, Agent: e.Identity.Agent,
		Project: e.Identity.ProjectID + "\x00" + e.Identity.ProjectDir}
}

// askRoundTrip ends the call with an InputRequiredResult asking the human.
func (e *Engine) askRoundTrip(ctx context.Context, c *Call, preview json.RawMessage) error {
	if e.States == nil {
		return &ConfirmationError{Kind: fault.ConfirmationFailed, Msg: fmt.Sprintf(
			"%s needs a human to confirm it, but this session cannot sign request states", c.Tool)}
	}
	h, err := confirm.ArgsHash(c.Tool, c.Args)
	if err != nil {
		return err
	}
	ttl := c.Decision.ConfirmTTL
	if ttl <= 0 {
		ttl = confirm.DefaultTTL
	}
	state, err := e.States.Issue(ctx, e.binding(c, h), ttl)
	if err != nil {
		return fmt.Errorf("request state: %w", err)
	}
	return &InputRequired{Message: e.confirmMessage(c, preview), Schema: confirmSchema, State: state}
}

// roundTripAnswer serves the retry of a call that was answered with an
// InputRequiredResult: its state must verify for exactly this call and be
// used once, then the human's answer decides.
func (e *Engine) roundTripAnswer(ctx context.Context, c *Call, next Handler, call confirm.Call, preview json.RawMessage) error {
	rt := c.RoundTrip
	invalid := func(why string) error {
		return &ConfirmationError{Kind: fault.RequestStateInvalid, Msg: fmt.Sprintf(
			"%s was not run: %s. Call it again without requestState and inputResponses, so the human is asked again", c.Tool, why)}
	}
	if !rt.Retry {
		return invalid("inputResponses came without the requestState toolhost issued with the question")
	}
	if e.States == nil {
		return invalid("this session cannot verify request states")
	}
	h, err := confirm.ArgsHash(c.Tool, c.Args)
	if err != nil {
		return err
	}
	if err := e.States.Redeem(ctx, rt.State, e.binding(c, h)); err != nil {
		if errors.Is(err, confirm.ErrStateInvalid) || errors.Is(err, confirm.ErrStateExpired) ||
			errors.Is(err, confirm.ErrStateMismatch) || errors.Is(err, confirm.ErrStateReplayed) {
			return invalid("its requestState is refused (" + err.Error() + ")")
		}
		return fmt.Errorf("request state: %w", err)
	}
	raw, ok := rt.Responses[ConfirmInput]
	if !ok {
		// The human was asked but the answer is missing: ask again.
		if rt.CanAsk {
			return e.askRoundTrip(ctx, c, preview)
		}
		return e.approve(ctx, c, next, call, "the retry carried no answer to the confirmation, so a human must decide with toolhost approve. ")
	}
	var ans Elicitation
	if err := json.Unmarshal(raw, &ans); err != nil || ans.Action == "" {
		return &ConfirmationError{Kind: fault.ConfirmationFailed, Msg: fmt.Sprintf(
			"%s was not run: inputResponses.%s must be an elicitation result {\"action\": \"accept\"|\"decline\"|\"cancel\"}", c.Tool, ConfirmInput)}
	}
	return e.decide(ctx, c, next, call, ans)
}

// approve is the path of a client that cannot ask a human (or whose human
// did not decide): a decision recorded with `toolhost approve` runs or
// refuses the call, else the call ends with needs_confirmation and the
// command that decides it. lead explains why this path was taken.
func (e *Engine) approve(ctx context.Context, c *Call, next Handler, call confirm.Call, lead string) error {
	if e.Confirm == nil {
		return &ConfirmationError{Kind: fault.ConfirmationFailed, Msg: fmt.Sprintf(
			"%s needs a human to confirm it, but this session has neither elicitation nor a confirmation store", c.Tool)}
	}
	res, err := e.Confirm.Check(ctx, call)
	if err != nil {
		return storeFailure(c, err)
	}
	for _, s := range res.Superseded {
		e.writeRow(e.supersededRow(c, s))
	}
	switch res.Verdict {
	case confirm.Run:
		return next(ctx, c)
	case confirm.Deny:
		return denied(c, res.Entry.ID)
	}
	return e.needsConfirmation(c, res, lead)
}

func (e *Engine) confirmMessage(c *Call, preview json.RawMessage) string {
	pretty, err := json.MarshalIndent(json.RawMessage(preview), "", "  ")
	if err != nil {
		pretty = preview
	}
	why := ""
	if c.Rule.Effect == rules.Confirm {
		why = "\n\nWhy you are asked: " + c.Rule.Ask() + "."
	}
	// What the agent or a client wrote is shown with its invisible and
	// bidirectional characters escaped, so it reads as it will run.
	return fmt.Sprintf("Agent %s wants to run the tool %s with these arguments:\n\n%s%s\n\nAccept to run it once; decline to refuse.",
		e.Identity.AgentName, visible.Line(c.Tool), visible.Text(string(pretty)), visible.Text(why))
}

// needsConfirmation is the answer to a client that cannot be asked: the
// preview and the id a human approves with `toolhost approve`.
func (e *Engine) needsConfirmation(c *Call, res confirm.Result, lead string) error {
	en := res.Entry
	if c.Rule.Effect == rules.Confirm {
		lead = c.Rule.Ask() + ". " + lead
	}
	if res.Expired != nil {
		lead += fmt.Sprintf("the decision on confirmation %s expired at %s, so a new one is needed. ", res.Expired.ID, res.Expired.ExpiresAt.Format(time.RFC3339))
	}
	preview, _ := json.MarshalIndent(map[string]any{
		"needs_confirmation": true,
		"confirmation_id":    en.ID,
		"tool":               en.Tool,
		"arguments":          en.Arguments,
		"expires_at":         en.ExpiresAt,
	}, "", "  ")
	msg := fmt.Sprintf("needs_confirmation: %s%s must be confirmed by a human before it runs. Ask the user to run\n"+
		"  toolhost approve %s --project-dir %s\n(or the same with --deny; toolhost approve --show %s prints what is asked), then call %s again with exactly the same arguments; "+
		"an approval is used once and expires at %s.\n%s",
		visible.Text(lead), visible.Line(c.Tool), en.ID, e.Identity.ProjectDir, en.ID, visible.Line(c.Tool), en.ExpiresAt.Format(time.RFC3339), visible.Text(string(preview)))
	return &ConfirmationError{Kind: fault.NeedsConfirmation, Msg: msg}
}

func (e *Engine) supersededRow(c *Call, s *confirm.Entry) *audit.Row {
	// The store keeps the preview pretty-printed; rows are one line each.
	var args bytes.Buffer
	if json.Compact(&args, s.Arguments) != nil {
		args.Reset()
	}
	return &audit.Row{
		TS: time.Now().UTC(), CallID: s.CallID, SessionID: e.Identity.SessionID, ProjectID: e.Identity.ProjectID,
		Agent: e.Identity.Agent, UnitID: e.Identity.UnitID, Tool: s.Tool, Source: c.Entry.Spec.Source,
		Arguments: args.Bytes(), Status: audit.StatusSuperseded, ErrorKind: fault.Superseded.String(),
		Error: fmt.Sprintf("pending confirmation %s superseded by call %s with other arguments", s.ID, c.Meta.CallID),
	}
}
