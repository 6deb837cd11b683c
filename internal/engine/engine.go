package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sync"
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
	// Answer answers the call while Call's goroutine is still held: by a
	// tool that overran its deadline and ignores its context, or by an
	// audit sink past its bound. The engine calls it at most once, from a
	// timer's goroutine, and Call then returns nil. Without it (a caller
	// that cannot answer but by returning), Call runs the call on a worker
	// and returns whichever outcome comes first.
	Answer func(*Outcome)
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
	// answered is claimed (claimAnswer) by whichever answers the call:
	// Call's return, the overrun timer of an attempt, or the audit bound
	// (Request.Answer). An int32, not an atomic.Bool, because an attempt
	// works on a copy of the Call.
	answered int32
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
	// workers runs the calls of callers that cannot answer early and the
	// audit writes of events, on goroutines whose stacks are already grown
	// (see gopool).
	workers *gopool.Pool

	auditFailures atomic.Int64
	// auditSlots holds one token per audit write in flight (at most
	// maxAuditInflight).
	auditSlots chan struct{}
}

// Defaults of the engine's knobs.
const (
	DefaultAuditTimeout = time.Second
	DefaultRetryBase    = 50 * time.Millisecond
	DefaultRetryCap     = time.Second
	// maxAuditInflight bounds the audit writes in flight, so a sink that
	// hangs forever holds a bounded number of goroutines. A call that
	// finds them all taken waits for one within its audit bound: a slow
	// sink under a burst slows the calls (and, through the transport's
	// own bound, the reading of requests) instead of sending their rows
	// to the log.
	maxAuditInflight = 64
	// overrunGrace is how long after its deadline (or its caller's
	// cancellation) an attempt may take to return before the call is
	// answered without it: a tool that honours its context returns within
	// it (and a read tool's timed-out attempt is then retried); one that
	// does not is answered as timed out, not retried.
	overrunGrace = 250 * time.Millisecond
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
	}
	if e.AuditTimeout <= 0 {
		e.AuditTimeout = DefaultAuditTimeout
	}
	e.auditSlots = make(chan struct{}, maxAuditInflight)
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
// classified outcome, or nil when req.Answer answered it. It never panics.
//
// The whole call, the tool included, runs on the caller's goroutine, so a
// call costs no hand-off between goroutines; timers answer it through
// req.Answer when the tool overruns its deadline (the timeout stage) or
// the sink its audit bound (store).
func (e *Engine) Call(ctx context.Context, req Request) *Outcome {
	if req.Answer != nil {
		return e.run(ctx, req)
	}
	first := make(chan *Outcome, 1)
	req.Answer = func(out *Outcome) { first <- out }
	e.workers.Go(func() {
		if out := e.run(ctx, req); out != nil {
			first <- out
		}
	})
	return <-first
}

func (e *Engine) run(ctx context.Context, req Request) *Outcome {
	c := &Call{Request: req, Start: time.Now()}
	if c.Meta.CallID == "" {
		c.Meta.CallID = callctx.NewCallID()
	}
	if e.Trace != nil || c.Meta.Traceparent != "" {
		ctx, c.span = e.Trace.Call(ctx, c.Tool, c.Meta.CallID, trace.Parent{Traceparent: c.Meta.Traceparent, Tracestate: c.Meta.Tracestate})
	}
	err := e.handler(ctx, c)
	if err == errAnswered {
		return nil
	}
	return e.conclude(ctx, c, err)
}

// conclude classifies the call, audits it and ends its span; it returns
// the outcome to answer with, or nil when the audit bound answered it
// already (through Request.Answer) while the sink held the write.
func (e *Engine) conclude(ctx context.Context, c *Call, err error) *Outcome {
	out := e.classify(ctx, c, err)
	out.Duration = time.Since(c.Start)
	row := e.row(c, out)
	e.store(row, func() {
		if c.claimAnswer() {
			c.Answer(out)
		}
	})
	if c.span != nil {
		c.span.End(e.traceOutcome(c, out, row))
	}
	if !c.claimAnswer() {
		return nil
	}
	return out
}

func (c *Call) claimAnswer() bool { return atomic.CompareAndSwapInt32(&c.answered, 0, 1) }

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

// timeout runs one attempt under the tool's deadline, on the caller's
// goroutine. The attempt works on a copy of the call, so a tool that
// ignores its context and finishes late never touches the call after the
// pipeline moved on.
//
// A tool that has not returned overrunGrace after its deadline (or after
// the caller's cancellation) is left running: the overrun timer claims the
// attempt (the state CAS), concludes the call as timed out (or cancelled)
// and answers it through Request.Answer; the late result is discarded and
// the stages above get errAnswered.
func (e *Engine) timeout(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		c.timedOut = false
		tctx, cancel := context.WithTimeoutCause(ctx, c.Decision.Timeout, errToolTimeout)
		defer cancel()
		a := &attempt{call: *c}
		stop := context.AfterFunc(tctx, func() {
			// A timer, not a sleep: a call whose tool honours its
			// context (the usual timeout) parks no goroutine for the
			// grace.
			time.AfterFunc(overrunGrace, func() { e.overrun(ctx, c, a) })
		})
		err := e.attempt(tctx, &a.call, next)
		stop()
		if !a.state.CompareAndSwap(attemptRunning, attemptEnded) {
			// The overrun timer answered the call; wait until it is done
			// with c.
			a.mu.Lock()
			//lint:ignore SA2001 the empty critical section is the wait itself
			a.mu.Unlock()
			return errAnswered
		}
		c.Result = a.call.Result
		if err != nil && context.Cause(tctx) == errToolTimeout && ctx.Err() == nil {
			c.timedOut = true
		}
		return err
	}
}

// attempt runs the tool: a panic in it becomes the attempt's error, as in
// the stages above (recoverPanic), and ends only the attempt.
func (e *Engine) attempt(ctx context.Context, c *Call, next Handler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return next(ctx, c)
}

// overrun answers a call whose attempt did not return in time, unless the
// attempt returned first.
func (e *Engine) overrun(ctx context.Context, c *Call, a *attempt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.state.CompareAndSwap(attemptRunning, attemptAbandoned) {
		return
	}
	err := ctx.Err()
	if err == nil {
		c.timedOut = true
		err = context.DeadlineExceeded
	}
	if out := e.conclude(ctx, c, err); out != nil {
		c.Answer(out)
	}
}

// attempt is one run of the tool.
type attempt struct {
	call  Call
	state atomic.Int32
	// mu is held by the overrun timer while it concludes the call.
	mu sync.Mutex
}

const (
	attemptRunning int32 = iota
	attemptEnded
	attemptAbandoned
)

// errAnswered tells the stages above the timeout that the overrun timer
// answered the call: none of them may touch it any more.
var errAnswered = errors.New("call answered by its overrun timer")

var errToolTimeout = errors.New("tool timeout")

type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

func (e *Engine) recoverPanic(next Handler) Handler {
	return func(ctx context.Context, c *Call) error { return e.attempt(ctx, c, next) }
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
	// errors.AsType, not errors.As with a variable: a variable whose
	// address is taken is allocated on every call, a result or not.
	switch {
	case err == nil && c.Result.UpstreamError:
		return audit.StatusError, fault.Upstream
	case err == nil && c.Result.Failed:
		return audit.StatusOKFalse, fault.None
	case err == nil:
		return audit.StatusOK, fault.None
	case isRejection(err):
		// An InputRequired too: the call waits for the human's answer.
		rej, _ := errors.AsType[fault.Rejection](err)
		return audit.StatusRejected, rej.RejectionKind()
	case c.timedOut:
		return audit.StatusTimeout, fault.Timeout
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			// Cancelled by toolhost itself (shutdown), not by the client.
			return audit.StatusCancelled, fault.Shutdown
		}
		return audit.StatusCancelled, fault.Cancelled
	case isPanic(err):
		return audit.StatusError, fault.Panic
	}
	return audit.StatusError, fault.System
}

func isRejection(err error) bool { _, ok := errors.AsType[fault.Rejection](err); return ok }

func isPanic(err error) bool { _, ok := errors.AsType[*panicError](err); return ok }

func asInputRequired(err error) *InputRequired {
	ir, _ := errors.AsType[*InputRequired](err)
	return ir
}

// classify is the one place that turns a call's error into an outcome:
// the verdict, and what the model reads of it.
func (e *Engine) classify(ctx context.Context, c *Call, err error) *Outcome {
	out := &Outcome{Result: c.Result, Retries: c.Retries, Err: err}
	out.Status, out.Kind = verdict(ctx, c, err)
	switch {
	case out.Kind == fault.None || out.Kind == fault.Upstream:
		// A result; an expected failure may name the error id its
		// tool logged the cause under.
		if out.Status == audit.StatusOKFalse {
			out.ErrorID = c.Result.ErrorID
		}
	case out.Kind == fault.InputRequired && asInputRequired(err) != nil:
		out.InputRequired = asInputRequired(err)
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
	case out.Kind == fault.Panic:
		pe, _ := errors.AsType[*panicError](err)
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

// writeRow stores a row that is no call's (an event), waiting at most
// AuditTimeout for the sink (store).
func (e *Engine) writeRow(row *audit.Row) {
	done := make(chan struct{})
	e.workers.Go(func() {
		if e.store(row, func() { close(done) }) {
			close(done)
		}
	})
	<-done
}

// store writes a row to the sink: a failing or slow sink never fails the
// call, and costs it at most AuditTimeout, the wait for a free write slot
// included. Past the bound the row is counted as failed and goes to the
// log whole (so it is not lost), and late runs on the bound's goroutine
// while the write goes on and may still land; store then returns false
// once the sink answers. A row that got no slot within the bound is not
// written at all (it went to the log).
func (e *Engine) store(row *audit.Row, late func()) bool {
	if e.Audit == nil {
		return true
	}
	wait := e.AuditTimeout
	select {
	case e.auditSlots <- struct{}{}:
	default:
		start := time.Now()
		full := time.NewTimer(wait)
		select {
		case e.auditSlots <- struct{}{}:
			full.Stop()
			wait -= time.Since(start)
		case <-full.C:
			e.auditFailed(row, fmt.Errorf("audit sink stalled: %d writes still pending after %s", maxAuditInflight, e.AuditTimeout))
			return true
		}
	}
	bound := time.AfterFunc(wait, func() {
		e.auditFailed(row, fmt.Errorf("audit sink did not answer within %s (the row may still land late)", e.AuditTimeout))
		late()
	})
	err := e.Audit.Write(row)
	<-e.auditSlots
	if !bound.Stop() {
		return false
	}
	if err != nil {
		e.auditFailed(row, err)
	}
	return true
}

func (e *Engine) auditFailed(row *audit.Row, err error) {
	n := e.auditFailures.Add(1)
	e.Trace.AuditFailed()
	b, _ := json.Marshal(row)
	e.Log.Error().Str("event", "audit_write_failed").Str("tool", row.Tool).Str("call_id", row.CallID).
		Int64("audit_write_failures", n).RawJSON("row", b).Err(err).Msg("audit row not stored in the sink")
}
