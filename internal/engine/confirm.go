package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/fault"
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

// ConfirmationError is a call a human did not (or not yet) confirm.
type ConfirmationError struct {
	// Kind is fault.NeedsConfirmation, UserCancelled, UserDenied or
	// ConfirmationFailed.
	Kind fault.Kind
	Msg  string
}

func (e *ConfirmationError) Error() string { return e.Msg }

// RejectionKind makes the error a fault.Rejection.
func (e *ConfirmationError) RejectionKind() fault.Kind { return e.Kind }

// confirm asks a human before a tool whose policy says confirm runs. It sits
// after validation, so an invalid call is never shown to a human, and
// before injection and execution.
func (e *Engine) confirm(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		if !c.Decision.Confirm {
			return next(ctx, c)
		}
		preview := audit.RedactArguments(c.Args)
		if c.Elicit != nil {
			ans, err := c.Elicit(ctx, e.confirmMessage(c, preview), confirmSchema)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err != nil:
				return &ConfirmationError{Kind: fault.ConfirmationFailed, Msg: fmt.Sprintf(
					"%s needs a human to confirm it, but asking the client failed (%v); call it again", c.Tool, err)}
			case ans.Action != "accept" || ans.Content["confirm"] == false:
				return &ConfirmationError{Kind: fault.UserCancelled, Msg: fmt.Sprintf(
					"cancelled by user: the human did not confirm %s with these arguments; do not repeat the same call, ask the user what to change", c.Tool)}
			}
			return next(ctx, c)
		}
		if e.Confirm == nil {
			return &ConfirmationError{Kind: fault.ConfirmationFailed, Msg: fmt.Sprintf(
				"%s needs a human to confirm it, but this session has neither elicitation nor a confirmation store", c.Tool)}
		}
		res, err := e.Confirm.Check(confirm.Call{
			SessionID: e.Identity.SessionID, Agent: e.Identity.Agent, Tool: c.Tool, CallID: c.Meta.CallID,
			Args: c.Args, Preview: preview, TTL: c.Decision.ConfirmTTL,
		})
		if err != nil {
			return fmt.Errorf("confirmation store: %w", err)
		}
		for _, s := range res.Superseded {
			e.writeRow(e.supersededRow(c, s))
		}
		switch res.Verdict {
		case confirm.Run:
			return next(ctx, c)
		case confirm.Deny:
			return &ConfirmationError{Kind: fault.UserDenied, Msg: fmt.Sprintf(
				"denied by user: a human denied %s with these arguments (confirmation %s); do not repeat the same call, ask the user what to change", c.Tool, res.Entry.ID)}
		}
		return e.needsConfirmation(c, res)
	}
}

func (e *Engine) confirmMessage(c *Call, preview json.RawMessage) string {
	pretty, err := json.MarshalIndent(json.RawMessage(preview), "", "  ")
	if err != nil {
		pretty = preview
	}
	return fmt.Sprintf("Agent %s wants to run the tool %s with these arguments:\n\n%s\n\nAccept to run it once; decline to refuse.",
		e.Identity.AgentName, c.Tool, pretty)
}

// needsConfirmation is the answer to a client that cannot be asked: the
// preview and the id a human approves with `toolhost approve`.
func (e *Engine) needsConfirmation(c *Call, res confirm.Result) error {
	en := res.Entry
	lead := ""
	if res.Expired != nil {
		lead = fmt.Sprintf("the decision on confirmation %s expired at %s, so a new one is needed. ", res.Expired.ID, res.Expired.ExpiresAt.Format(time.RFC3339))
	}
	preview, _ := json.MarshalIndent(map[string]any{
		"needs_confirmation": true,
		"confirmation_id":    en.ID,
		"tool":               en.Tool,
		"arguments":          en.Arguments,
		"expires_at":         en.ExpiresAt,
	}, "", "  ")
	msg := fmt.Sprintf("needs_confirmation: %s%s must be confirmed by a human before it runs. Ask the user to run\n"+
		"  toolhost approve %s --project-dir %s\n(or the same with --deny), then call %s again with exactly the same arguments; "+
		"an approval is used once and expires at %s.\n%s",
		lead, c.Tool, en.ID, e.Identity.ProjectDir, c.Tool, en.ExpiresAt.Format(time.RFC3339), preview)
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
