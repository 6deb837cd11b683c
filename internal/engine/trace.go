package engine

import (
	"context"
	"strings"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/trace"
)

// The engine's side of tracing (internal/trace opens and ends the spans):
// the call's span in Call, a span per stage that takes time (traceStage in
// the stage list), and a span per attempt with the upstream call and the
// spawned commands below it (traceAttempt). Without a session every hook
// is a nil check, except that a caller's traceparent is still passed on.

// traceStage gives stage mw a span of its own while it works, when when
// is nil or true for the call: the span ends as the stage hands the call
// on, or with the verdict on the error the stage ended the call with.
func traceStage(name string, when func(*Call) bool, mw Middleware) Middleware {
	return func(next Handler) Handler {
		h := mw(func(ctx context.Context, c *Call) error {
			if c.span != nil {
				ctx = c.span.Handover(ctx)
			}
			return next(ctx, c)
		})
		return func(ctx context.Context, c *Call) error {
			if c.span == nil || (when != nil && !when(c)) {
				return h(ctx, c)
			}
			sctx := c.span.Stage(ctx, name)
			err := h(sctx, c)
			kind := fault.None
			if err != nil {
				_, kind = verdict(ctx, c, err)
			}
			c.span.EndStage(sctx, kind)
			return err
		}
	}
}

// traceAttempt gives each attempt its span (an upstream tool's also the
// MCP client span of its call), and the commands the attempt starts the
// trace context in TRACEPARENT and spans of their own.
func (e *Engine) traceAttempt(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		if c.span == nil && c.Meta.Traceparent == "" {
			return next(ctx, c)
		}
		var a *trace.Attempt
		if c.span != nil {
			server, _ := strings.CutPrefix(c.Entry.Spec.Source, "mcp:")
			if server == c.Entry.Spec.Source {
				server = ""
			}
			ctx, a = c.span.Attempt(ctx, c.Retries+1, server, c.Entry.Spec.Remote)
		}
		orig := c.Ctx
		if orig != nil && orig.Procs != nil {
			if c.Retries == 0 {
				// The first attempt's tool gets the call's own Ctx (inject
				// builds one per call) rather than a copy of that large
				// struct.
				orig.Procs = trace.Procs(ctx, orig.Procs, e.Trace)
			} else {
				// A retry's gets a copy: an attempt that timed out may still
				// be running with the call's own.
				cx := *orig
				cx.Procs = trace.Procs(ctx, orig.Procs, e.Trace)
				c.Ctx = &cx
			}
		}
		err := next(ctx, c)
		if err == errAnswered {
			// The overrun timer answered the call as timed out (or
			// cancelled) and may have retried nothing: the attempt ends
			// with the call's verdict.
			if a != nil {
				a.End(fault.Timeout, false)
			}
			return err
		}
		c.Ctx = orig
		if a != nil {
			kind := fault.None
			if err != nil {
				_, kind = verdict(ctx, c, err)
			}
			a.End(kind, c.Result.UpstreamError)
		}
		return err
	}
}

// traceOutcome is what the call's span and metrics record of its outcome;
// the arguments are the audit row's, redacted by the audit's redactor, and
// the result is redacted by the same.
func (e *Engine) traceOutcome(c *Call, out *Outcome, row *audit.Row) trace.Outcome {
	o := trace.Outcome{
		Status: out.Status, Kind: out.Kind, IsError: out.IsError || c.Result.UpstreamError,
		Message: out.Message, Retries: out.Retries, Sandbox: c.Result.Sandbox, Unit: row.UnitID, ErrorID: out.ErrorID,
		Rule: c.Rule.Rule, RuleEffect: string(c.Rule.Effect),
	}
	if c.Policy != nil {
		o.Permission, o.Confirm = c.Decision.Permission, c.Decision.Confirm
	}
	if e.Trace.Args() {
		o.Args = row.Arguments
		res := c.Result.Structured
		if len(c.Result.Raw) > 0 {
			res = c.Result.Raw
		}
		o.Result = audit.RedactArguments(res)
	}
	return o
}
