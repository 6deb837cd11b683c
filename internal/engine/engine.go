package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/util/gopool"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// unknownToolError is a call to a name the registry does not hold; the
// server answers its kind, fault.UnknownTool, with -32602.
type unknownToolError struct{ name string }

func (e *unknownToolError) Error() string {
	return fmt.Sprintf("unknown tool %q; call tools/list for the available tools", e.name)
}
func (e *unknownToolError) RejectionKind() fault.Kind { return fault.UnknownTool }

// Request is one tools/call as the server hands it over.
type Request struct {
	Tool     string
	Args     json.RawMessage
	Meta     callctx.Meta
	Progress callctx.ProgressFunc
	// Elicit asks the human through the client (MCP elicitation/create); nil
	// when the client did not declare the elicitation capability, in which
	// case confirmations go through `toolhost approve`.
	Elicit ElicitFunc
	// RoundTrip is set for a 2026-07-28 request that can take (or answers)
	// a confirmation as a multi-round-trip request.
	RoundTrip *RoundTrip
}

// Outcome is the classified result of a call.
type Outcome struct {
	Result  tool.Result
	IsError bool
	// Message is what the model reads when IsError is set.
	Message string
	Status  audit.Status
	// Kind is why the call did not end in a result (fault.None when it did).
	Kind     fault.Kind
	ErrorID  string
	Retries  int
	Duration time.Duration
	Err      error
	// InputRequired is set when the call waits for a human's answer
	// through the client (a 2026-07-28 InputRequiredResult).
	InputRequired *InputRequired
}

// Call is the state that flows through the pipeline stages.
type Call struct {
	Request
	Start    time.Time
	Entry    *registry.Entry
	Decision policy.Decision
	// Policy is the policy file in force when the call started; a reload
	// never changes it for this call.
	Policy *policy.File
	// Rule is what the policy file's rules decided (Rule.Rule is the id of
	// the rule that matched, "" when none did); the rules stage sets it.
	Rule    rules.Verdict
	Ctx     *callctx.Ctx
	Result  tool.Result
	Retries int
	// doc is the validate stage's decoding of the arguments (the generic
	// form wirejson.DecodeAny gives), which the rules read.
	doc any
	// timedOut is set by the timeout stage when the last attempt's deadline
	// fired.
	timedOut bool
	// final is the outcome when the attempt's goroutine classified and
	// audited the call itself (timeout stage), finalRow its audit row.
	final    *Outcome
	finalRow *audit.Row
	// span is the call's span; nil when the session exports nothing.
	span *trace.Call
}

// Handler is a pipeline stage's continuation.
type Handler func(ctx context.Context, c *Call) error

// Middleware wraps a Handler with one cross-cutting concern.
type Middleware func(Handler) Handler

// Engine runs calls for one session (one agent in one project).
type Engine struct {
	Registry *registry.Registry
	Agent    *agents.Agent
	Policy   *policy.Policy
	Audit    audit.Sink
	Identity callctx.Identity
	Services callctx.Services
	Settings callctx.Settings
	Log      zerolog.Logger
	// Guard checks a command a tool would start (bashguard.Check or
	// CheckArgv); nil allows all. A command's Dir reaches it absolute.
	Guard func(tool.Command) error
	// Programs finds the files command words run (progid), for the
	// rules' cmd; nil names programs as written.
	Programs bashguard.Programs
	// Confirm keeps confirmations for clients without elicitation.
	Confirm store.Confirmations
	// States signs and redeems the request states of multi-round-trip
	// confirmations.
	States *confirm.States
	// AuditTimeout bounds how long a call waits for its audit row
	// (DefaultAuditTimeout if zero).
	AuditTimeout time.Duration
	// RetryBase and RetryCap shape the backoff between attempts of a read
	// tool (DefaultRetryBase, DefaultRetryCap if zero).
	RetryBase, RetryCap time.Duration
	// Trace is the session's telemetry; nil exports nothing (a caller's
	// traceparent still reaches upstreams and commands).
	Trace *trace.Session

	handler Handler
	// workers runs attempts (which audit the calls they finish, see
	// finish) and the audit writes of calls that end without one, on
	// goroutines whose stacks are already grown (see gopool).
	workers *gopool.Pool

	auditFailures atomic.Int64
	auditInflight atomic.Int64
}

// Defaults of the engine's knobs.
const (
	DefaultAuditTimeout = time.Second
	DefaultRetryBase    = 50 * time.Millisecond
	DefaultRetryCap     = time.Second
	// maxAuditInflight bounds the audit writes still running after their
	// call gave up on them, so a sink that hangs forever costs a bounded
	// number of goroutines.
	maxAuditInflight = 64
)

// AuditFailures is the number of rows the sink failed to store.
func (e *Engine) AuditFailures() int64 { return e.auditFailures.Load() }

// Init composes the pipeline; call once before Call.
func (e *Engine) Init() {
	e.workers = gopool.New(10 * time.Second)
	stages := []Middleware{
		// Outermost, on the caller's goroutine: a panic in a stage of the
		// pipeline itself (the guard's parser, a confirmation client)
		// becomes an isError outcome like a tool's, never a dead daemon.
		e.recoverPanic,
		e.lookup,
		// The agent's toolPolicy, then the policy file's permission.
		e.permission,
		// Validation and a human's confirmation have spans of their own
		// when the call is traced.
		traceStage(trace.Validate, nil, e.validate),
		// The policy file's rules on the validated arguments: a deny
		// refuses, a confirm or allow sets whether the next stage asks.
		e.rules,
		traceStage(trace.Confirm, func(c *Call) bool { return c.Decision.Confirm }, e.confirm),
		e.inject,
		e.guard,
		e.retry,
		// A span per attempt (the upstream call, the commands spawned
		// below it), and the trace context handed to both.
		e.traceAttempt,
		e.timeout,
		// Innermost, on the attempt's goroutine, which the outer one
		// cannot see.
		e.recoverPanic,
	}
	if e.AuditTimeout <= 0 {
		e.AuditTimeout = DefaultAuditTimeout
	}
	if e.RetryBase <= 0 {
		e.RetryBase = DefaultRetryBase
	}
	if e.RetryCap <= 0 {
		e.RetryCap = DefaultRetryCap
	}
	h := Handler(execute)
	for i := len(stages) - 1; i >= 0; i-- {
		h = stages[i](h)
	}
	e.handler = h
}

// Call runs one tool call through the pipeline, audits it and returns the
// classified outcome. It never panics.
func (e *Engine) Call(ctx context.Context, req Request) *Outcome {
	c := &Call{Request: req, Start: time.Now()}
	if c.Meta.CallID == "" {
		c.Meta.CallID = callctx.NewCallID()
	}
	if e.Trace != nil || c.Meta.Traceparent != "" {
		ctx, c.span = e.Trace.Call(ctx, c.Tool, c.Meta.CallID, trace.Parent{Traceparent: c.Meta.Traceparent, Tracestate: c.Meta.Tracestate})
	}
	err := e.handler(ctx, c)
	if out := c.final; out != nil {
		if c.span != nil {
			c.span.End(e.traceOutcome(c, out, c.finalRow))
		}
		return out
	}
	out := e.classify(ctx, c, err)
	out.Duration = time.Since(c.Start)
	row := e.row(c, out)
	e.writeRow(row)
	if c.span != nil {
		c.span.End(e.traceOutcome(c, out, row))
	}
	return out
}

func (e *Engine) lookup(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		entry, ok := e.Registry.Lookup(c.Tool)
		if !ok {
			return &unknownToolError{name: c.Tool}
		}
		c.Entry = entry
		return next(ctx, c)
	}
}

// permission refuses a tool the agent may not call, with the reason
// policy.File.Access gives (the same answer that hides it from tools/list),
// and fixes the call's Decision.
func (e *Engine) permission(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		c.Policy = e.Policy.Current()
		a := c.Policy.Access(e.Agent, c.Entry.Spec)
		if !a.Visible() {
			return &tool.PermissionError{Tool: c.Tool, Reason: a.Reason, Kind: a.Kind}
		}
		c.Decision = a.Decision
		return next(ctx, c)
	}
}

func (e *Engine) validate(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		args := c.Args
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
			c.Args = args
		}
		sch, err := c.Entry.Validator()
		if err != nil {
			return err
		}
		doc, err := wirejson.DecodeAny(args)
		if err != nil {
			return &tool.ValidationError{Field: "(root)", Reason: "arguments are not valid JSON: " + err.Error()}
		}
		if err := sch.Check(doc); err != nil {
			var ve *tool.ValidationError
			if errors.As(err, &ve) {
				ve.Reason += " — fix the arguments and call again"
			}
			return err
		}
		c.doc = doc
		return next(ctx, c)
	}
}

// rules applies the policy file's rules to a call whose arguments passed
// validation (internal/rules): the first rule that matches decides. deny
// refuses the call with the rule's reason; confirm makes the confirm stage
// ask a human (elicitation, an InputRequiredResult or toolhost approve,
// whichever the client can do); allow lets the call run without asking,
// even when the tool's entry says confirm. A tool no rule can apply to
// costs one map lookup: its arguments are not looked at again.
func (e *Engine) rules(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		tr := c.Policy.RuleSet().For(c.Tool)
		if tr == nil {
			return next(ctx, c)
		}
		in := &rules.Input{Tool: c.Tool, Agent: e.Identity.AgentName, Unit: e.Identity.UnitID,
			Project: e.Identity.ProjectID, Now: c.Start, Args: c.doc}
		if c.Meta.UnitID != "" {
			in.Unit = c.Meta.UnitID
		}
		if c.Entry.Spec.Commands != nil {
			in.Commands = func() []tool.Command { return e.commands(c) }
			in.Programs = e.Programs
		}
		c.Rule = tr.Decide(in)
		switch c.Rule.Effect {
		case rules.Deny:
			return &rules.Refusal{Tool: c.Tool, Verdict: c.Rule}
		case rules.Confirm:
			c.Decision.Confirm = true
		case rules.Allow:
			c.Decision.Confirm = false
		}
		return next(ctx, c)
	}
}

func (e *Engine) inject(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		settings := e.Settings
		if c.Policy != nil {
			// The env allow-list lives in the policy file, so it follows
			// reloads like every other policy setting.
			settings.EnvAllowList = c.Policy.EnvAllowList
		}
		cx, err := callctx.New(e.Identity, e.Services, settings, c.Meta, c.Progress)
		if err != nil {
			return &tool.ValidationError{Field: "_meta", Reason: err.Error()}
		}
		c.Ctx = cx
		return next(ctx, c)
	}
}

// commands are the commands the call would run, each Dir made absolute
// (a tool names it relative to the project dir).
func (e *Engine) commands(c *Call) []tool.Command {
	cmds := c.Entry.Spec.Commands(c.Args)
	for i := range cmds {
		if d := cmds[i].Dir; d != "" && !filepath.IsAbs(d) {
			cmds[i].Dir = filepath.Join(e.Identity.ProjectDir, filepath.FromSlash(d))
		}
	}
	return cmds
}

func (e *Engine) guard(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		if c.Entry.Spec.Commands == nil || e.Guard == nil {
			return next(ctx, c)
		}
		for _, cmd := range e.commands(c) {
			if err := e.Guard(cmd); err != nil {
				if cmd.Where != "" {
					return &whereRejection{where: cmd.Where, err: err}
				}
				return err
			}
		}
		return next(ctx, c)
	}
}

// whereRejection names the input a refused command came from.
type whereRejection struct {
	where string
	err   error
}

func (e *whereRejection) Error() string { return e.where + ": " + e.err.Error() }
func (e *whereRejection) Unwrap() error { return e.err }

// RejectionKind is the wrapped refusal's kind.
func (e *whereRejection) RejectionKind() fault.Kind {
	if r, ok := e.err.(fault.Rejection); ok {
		return r.RejectionKind()
	}
	return fault.Guard
}

// timeout runs one attempt under the tool's deadline. The attempt works on
// a copy of the call, so a tool that ignores its context and finishes late
// can never touch the call after the pipeline moved on.
//
// An attempt that ends in a way no retry follows (a result, or an error
// that is neither transient nor the deadline's) is finished on its own
// goroutine: classified and audited there (finish), so the caller's
// goroutine wakes once, for the outcome, instead of once for the result and
// again for the audit write. The caller still answers at the deadline
// whatever the tool does: whoever of the two claims the attempt first (the
// state CAS) owns its outcome, and a late tool's result is discarded.
func (e *Engine) timeout(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		c.timedOut = false
		tctx, cancel := context.WithTimeoutCause(ctx, c.Decision.Timeout, errToolTimeout)
		defer cancel()
		a := &attempt{call: *c, done: make(chan attemptEnd, 1)}
		e.workers.Go(func() {
			err := next(tctx, &a.call)
			if err == nil || !(Transient(err) || context.Cause(tctx) == errToolTimeout) {
				if a.state.CompareAndSwap(attemptRunning, attemptFinishing) {
					e.finish(ctx, a, err)
					return
				}
			}
			a.done <- attemptEnd{err: err}
		})
		select {
		case end := <-a.done:
			return e.ended(c, a, end, tctx, ctx)
		case <-tctx.Done():
			if a.state.CompareAndSwap(attemptRunning, attemptAbandoned) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				c.timedOut = true
				return context.DeadlineExceeded
			}
			// The attempt ended in time and is being finished: its outcome
			// comes within the audit bound (finish).
			return e.ended(c, a, <-a.done, tctx, ctx)
		}
	}
}

// ended takes what an attempt sent: the outcome finish produced, or the
// attempt's error for the stages above (retry) to decide on.
func (e *Engine) ended(c *Call, a *attempt, end attemptEnd, tctx, ctx context.Context) error {
	c.Result = a.call.Result
	if end.out != nil {
		c.final, c.finalRow = end.out, end.row
		return errFinished
	}
	if end.err != nil && context.Cause(tctx) == errToolTimeout && ctx.Err() == nil {
		c.timedOut = true
	}
	return end.err
}

// attempt is one run of the tool on a worker goroutine.
type attempt struct {
	call  Call
	state atomic.Int32
	done  chan attemptEnd
	// sent is claimed by whichever of finish and its audit bound sends the
	// outcome, so exactly one does.
	sent atomic.Bool
}

type attemptEnd struct {
	err error
	out *Outcome
	row *audit.Row
}

const (
	attemptRunning int32 = iota
	attemptFinishing
	attemptAbandoned
)

// errFinished tells the stages above the timeout that the attempt's
// goroutine classified and audited the call (Call.final).
var errFinished = errors.New("call finished by its attempt")

// finish classifies and audits a call on its attempt's goroutine. A sink
// that does not answer within AuditTimeout costs the caller no more than
// that: a timer sends the outcome and counts the row as failed, and the
// late write is left to land (bounded by maxAuditInflight like any other).
func (e *Engine) finish(ctx context.Context, a *attempt, err error) {
	c := &a.call
	out := e.classify(ctx, c, err)
	out.Duration = time.Since(c.Start)
	row := e.row(c, out)
	send := func() {
		if a.sent.CompareAndSwap(false, true) {
			a.done <- attemptEnd{out: out, row: row}
		}
	}
	if e.Audit == nil {
		send()
		return
	}
	if e.auditInflight.Load() >= maxAuditInflight {
		e.auditFailed(row, fmt.Errorf("audit sink stalled: %d writes still pending", maxAuditInflight))
		send()
		return
	}
	e.auditInflight.Add(1)
	bound := time.AfterFunc(e.AuditTimeout, func() {
		if a.sent.CompareAndSwap(false, true) {
			e.auditFailed(row, fmt.Errorf("audit sink did not answer within %s (the row may still land late)", e.AuditTimeout))
			a.done <- attemptEnd{out: out, row: row}
		}
	})
	werr := e.Audit.Write(row)
	e.auditInflight.Add(-1)
	if bound.Stop() && werr != nil {
		e.auditFailed(row, werr)
	}
	send()
}

var errToolTimeout = errors.New("tool timeout")

type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

func (e *Engine) recoverPanic(next Handler) Handler {
	return func(ctx context.Context, c *Call) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &panicError{value: v, stack: debug.Stack()}
			}
		}()
		return next(ctx, c)
	}
}

func execute(ctx context.Context, c *Call) error {
	r, err := c.Entry.Tool.Call(ctx, c.Ctx, c.Args)
	if err != nil {
		return err
	}
	c.Result = r
	return nil
}

// verdict is the one classification of how a call, or one of its stages
// or attempts, ended with err: its audit status and why it did not end in
// a result (fault.None when it did). classify builds the outcome on it and
// the trace hooks record it on the spans.
func verdict(ctx context.Context, c *Call, err error) (audit.Status, fault.Kind) {
	var rej fault.Rejection
	var pe *panicError
	switch {
	case err == nil && c.Result.UpstreamError:
		return audit.StatusError, fault.Upstream
	case err == nil && c.Result.Failed:
		return audit.StatusOKFalse, fault.None
	case err == nil:
		return audit.StatusOK, fault.None
	case errors.As(err, &rej):
		// An InputRequired too: the call waits for the human's answer.
		return audit.StatusRejected, rej.RejectionKind()
	case c.timedOut:
		return audit.StatusTimeout, fault.Timeout
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			// Cancelled by toolhost itself (shutdown), not by the client.
			return audit.StatusCancelled, fault.Shutdown
		}
		return audit.StatusCancelled, fault.Cancelled
	case errors.As(err, &pe):
		return audit.StatusError, fault.Panic
	}
	return audit.StatusError, fault.System
}

// classify is the one place that turns a call's error into an outcome:
// the verdict, and what the model reads of it.
func (e *Engine) classify(ctx context.Context, c *Call, err error) *Outcome {
	out := &Outcome{Result: c.Result, Retries: c.Retries, Err: err}
	out.Status, out.Kind = verdict(ctx, c, err)
	var ir *InputRequired
	var pe *panicError
	switch {
	case out.Kind == fault.None || out.Kind == fault.Upstream:
		// A result; an expected failure may name the error id its
		// tool logged the cause under.
		if out.Status == audit.StatusOKFalse {
			out.ErrorID = c.Result.ErrorID
		}
	case errors.As(err, &ir):
		out.InputRequired = ir
		out.Message = "waiting for the human's answer: the client asks and calls again with it"
	case out.Status == audit.StatusRejected:
		rej, _ := errors.AsType[fault.Rejection](err)
		out.IsError, out.Message = true, rej.Error()
	case out.Kind == fault.Timeout:
		out.IsError = true
		out.Message = fmt.Sprintf("%s timed out after %d ms; narrow the request or raise timeout_ms in the tool policy", c.Tool, c.Decision.Timeout.Milliseconds())
	case out.Kind == fault.Cancelled:
		out.IsError, out.Message = true, "cancelled by the client"
	case out.Kind == fault.Shutdown:
		out.IsError = true
		out.Message = fmt.Sprintf("%s did not finish: %v; it may have done part of its work, so check before calling it again", c.Tool, context.Cause(ctx))
	case errors.As(err, &pe):
		out.IsError = true
		out.ErrorID = callctx.NewCallID()
		out.Message = fmt.Sprintf("internal error in %s (error id %s); the daemon is still serving, report the id", c.Tool, out.ErrorID)
		e.Log.Error().Str("event", "tool_panic").Str("tool", c.Tool).Str("error_id", out.ErrorID).
			Str("panic", fmt.Sprint(pe.value)).Str("stack", string(pe.stack)).Msg("tool panicked")
	default:
		out.IsError = true
		out.ErrorID = callctx.NewCallID()
		out.Message = fmt.Sprintf("%s failed: %s (error id %s)", c.Tool, fault.Explain(err), out.ErrorID)
		e.Log.Error().Str("event", "tool_error").Str("tool", c.Tool).Str("error_id", out.ErrorID).Err(err).Msg("tool failed")
	}
	return out
}

// row is the audit row of a call and its outcome.
func (e *Engine) row(c *Call, out *Outcome) *audit.Row {
	row := &audit.Row{
		TS: time.Now().UTC(), SessionID: e.Identity.SessionID, ProjectID: e.Identity.ProjectID,
		Agent: e.Identity.Agent, UnitID: e.Identity.UnitID, Tool: c.Tool,
		Arguments: audit.RedactArguments(c.Request.Args), Status: out.Status, ErrorKind: out.Kind.String(), ErrorID: out.ErrorID,
		RetryCount: out.Retries, DurationMS: float64(out.Duration.Microseconds()) / 1000,
		Sandbox: c.Result.Sandbox,
	}
	if out.IsError || out.InputRequired != nil {
		row.Error = redact.String(out.Message)
	} else if c.Result.Failed || c.Result.UpstreamError {
		row.Error = redact.String(c.Result.Reason)
	}
	if c.Entry != nil {
		row.Source = c.Entry.Spec.Source
	}
	row.CallID = c.Meta.CallID
	row.Traceparent = c.Meta.Traceparent
	row.ClientSessionID, row.ToolUseID = e.Identity.ClientSessionID, c.Meta.ToolUseID
	row.Rule = c.Rule.Rule
	if c.Ctx != nil {
		row.UnitID = c.Ctx.UnitID
	} else if c.Meta.UnitID != "" {
		row.UnitID = c.Meta.UnitID
	}
	return row
}

// AuditEvent stores a row that is not a call of the session (an upstream
// tool pinned or withheld) with the session's identity, the same way as a
// call's row.
func (e *Engine) AuditEvent(row *audit.Row) {
	if row.TS.IsZero() {
		row.TS = time.Now().UTC()
	}
	if row.CallID == "" {
		row.CallID = callctx.NewCallID()
	}
	row.SessionID, row.ProjectID, row.Agent, row.UnitID = e.Identity.SessionID, e.Identity.ProjectID, e.Identity.Agent, e.Identity.UnitID
	e.writeRow(row)
}

// writeRow stores a row of a call that ended before its attempt or
// without one (a rejection, a timeout, a retried fault) or of an event,
// waiting at most AuditTimeout: a failing or slow sink never fails or
// stalls the call. A row that did not make it goes to
// the log whole, so it is not lost, and is counted.
func (e *Engine) writeRow(row *audit.Row) {
	if e.Audit == nil {
		return
	}
	if e.auditInflight.Load() >= maxAuditInflight {
		e.auditFailed(row, fmt.Errorf("audit sink stalled: %d writes still pending", maxAuditInflight))
		return
	}
	e.auditInflight.Add(1)
	done := make(chan error, 1)
	e.workers.Go(func() {
		defer e.auditInflight.Add(-1)
		done <- e.Audit.Write(row)
	})
	t := time.NewTimer(e.AuditTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			e.auditFailed(row, err)
		}
	case <-t.C:
		e.auditFailed(row, fmt.Errorf("audit sink did not answer within %s (the row may still land late)", e.AuditTimeout))
	}
}

func (e *Engine) auditFailed(row *audit.Row, err error) {
	n := e.auditFailures.Add(1)
	e.Trace.AuditFailed()
	b, _ := json.Marshal(row)
	e.Log.Error().Str("event", "audit_write_failed").Str("tool", row.Tool).Str("call_id", row.CallID).
		Int64("audit_write_failures", n).RawJSON("row", b).Err(err).Msg("audit row not stored in the sink")
}
