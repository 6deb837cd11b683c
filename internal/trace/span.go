package trace

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/procs"
)

// Attribute keys: the MCP semantic conventions' first, then toolhost's own.
const (
	keyMethod          = attribute.Key("mcp.method.name")
	keyProtocolVersion = attribute.Key("mcp.protocol.version")
	keyMCPSession      = attribute.Key("mcp.session.id")
	keyRequestID       = attribute.Key("jsonrpc.request.id")
	keyStatusCode      = attribute.Key("rpc.response.status_code")
	keyErrorType       = attribute.Key("error.type")
	keyToolName        = attribute.Key("gen_ai.tool.name")
	keyOperation       = attribute.Key("gen_ai.operation.name")
	keyToolCallID      = attribute.Key("gen_ai.tool.call.id")
	keyToolArgs        = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult      = attribute.Key("gen_ai.tool.call.result")
	keyTransport       = attribute.Key("network.transport")
	keyNetProtocol     = attribute.Key("network.protocol.name")
	keyNetVersion      = attribute.Key("network.protocol.version")
	keyPID             = attribute.Key("process.pid")
	keyExecutable      = attribute.Key("process.executable.name")
	keyExitCode        = attribute.Key("process.exit.code")

	keySession    = attribute.Key("toolhost.session.id")
	keyAgent      = attribute.Key("toolhost.agent")
	keyProject    = attribute.Key("toolhost.project.id")
	keyUnit       = attribute.Key("toolhost.unit")
	keyStatus     = attribute.Key("toolhost.status")
	keyKind       = attribute.Key("toolhost.rejection.kind")
	keyPermission = attribute.Key("toolhost.policy.permission")
	keyConfirm    = attribute.Key("toolhost.policy.confirm")
	keyRetries    = attribute.Key("toolhost.retries")
	keyAttempt    = attribute.Key("toolhost.attempt")
	keySandbox    = attribute.Key("toolhost.sandbox")
	keyErrorID    = attribute.Key("toolhost.error_id")
	keyUpstream   = attribute.Key("toolhost.upstream")
	keySignal     = attribute.Key("toolhost.process.signal")
	keyConfirmed  = attribute.Key("toolhost.confirmation")
	keyRule       = attribute.Key("toolhost.rule.id")
	keyRuleEffect = attribute.Key("toolhost.rule.effect")
)

// ToolCall is gen_ai.operation.name of a tool call.
const ToolCall = "execute_tool"

// errorToolError is error.type of a call whose result has isError set.
const errorToolError = "tool_error"

// Identity is who a session's tool calls belong to.
type Identity struct {
	SessionID, Agent, ProjectID, Unit string
}

// Session is the telemetry of one agent session: the span every request
// without a trace context of its own belongs to (one trace per session).
// A nil *Session records nothing.
type Session struct {
	p    *Provider
	span oteltrace.Span
}

// Session starts the backend for the session id (its identity is part of
// the resource: Identity.Attributes) and the session's span: a child of
// TRACEPARENT in toolhost's environment when that is set, else the root of
// a new trace. A Provider has one session; calling Session again returns
// it, and after Shutdown it returns nil.
func (p *Provider) Session(id Identity) *Session {
	if p == nil {
		return nil
	}
	p.once.Do(func() {
		if err := p.start(id); err != nil {
			p.log.Error().Str("event", "otel_disabled").Err(err).Msg("OpenTelemetry could not start; the session runs without it")
			_ = p.b.Shutdown(context.Background())
			return
		}
		parent := p.env
		if parent == nil {
			parent = context.Background()
		}
		_, span := p.tracer.Start(parent, "toolhost session", oteltrace.WithAttributes(keySession.String(id.SessionID)))
		p.session = &Session{p: p, span: span}
	})
	return p.session
}

// End ends the session's span (before Provider.Shutdown flushes it).
func (s *Session) End() {
	if s != nil {
		s.span.End()
	}
}

// Args reports whether redacted arguments and results go on tool call
// spans (--trace-args).
func (s *Session) Args() bool { return s != nil && s.p.args }

// AuditFailed counts an audit row the sink did not store.
func (s *Session) AuditFailed() {
	if s != nil {
		s.p.inst.auditFailures.Add(1)
	}
}

// Parent is a trace context as a request carries it (_meta.traceparent and
// _meta.tracestate).
type Parent struct {
	Traceparent, Tracestate string
}

// parse returns the span context of a W3C traceparent/tracestate pair; an
// invalid one gives an invalid span context, as W3C Trace Context says a
// receiver must then ignore it.
func parse(traceparent, tracestate string) oteltrace.SpanContext {
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return oteltrace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), c))
}

// parentCtx is ctx with the span the request's own spans hang below: the
// request's trace context when it has a valid one (and a link to the
// session's span, the ambient context the conventions say to link), else
// the session's span. The link's option is appended to opts.
func (s *Session) parentCtx(ctx context.Context, p Parent, opts []oteltrace.SpanStartOption) (context.Context, []oteltrace.SpanStartOption) {
	if p.Traceparent != "" {
		if sc := parse(p.Traceparent, p.Tracestate); sc.IsValid() {
			return oteltrace.ContextWithRemoteSpanContext(ctx, sc),
				append(opts, oteltrace.WithLinks(oteltrace.Link{SpanContext: s.span.SpanContext()}))
		}
	}
	return oteltrace.ContextWithSpan(ctx, s.span), opts
}

// serverKind is the start option of a request's span.
var serverKind = oteltrace.WithSpanKind(oteltrace.SpanKindServer)

// Transport is what a connection's transport says about itself, for the
// spans of its requests.
type Transport struct {
	// Network is network.transport: pipe (stdio) or tcp (HTTP).
	Network string
	// Protocol and Version are network.protocol.name and .version (http,
	// 1.1) when there is an application protocol under MCP.
	Protocol, Version string
	// SessionID is the MCP session (Mcp-Session-Id) when there is one.
	SessionID string
}

type transportKey struct{}

// WithTransport returns ctx carrying t; a transport gives it to every
// request of a connection.
func WithTransport(ctx context.Context, t Transport) context.Context {
	return context.WithValue(ctx, transportKey{}, t)
}

// Request is the span of one MCP request the server answers.
type Request struct {
	s      *Session
	start  time.Time
	method string
	id     json.RawMessage
	span   oteltrace.Span
	// op are the request's mcp.server.operation.duration attributes (but
	// error.type, known at the end).
	op opKey
	// attrs gathers the span's attributes, the tool call's included (added
	// by Call.End before the server ends the request, on the same
	// goroutine), so the span gets them in one SetAttributes at its end.
	// Its array is scratch from attrsPool, returned at End: the SDK copies
	// what SetAttributes gets.
	attrs   []attribute.KeyValue
	scratch *[]attribute.KeyValue
	// toolError is set when the call's result has isError.
	toolError bool
	// opts holds the span's start options, and call the tool call whose
	// span this is: a request carries them rather than allocating each.
	opts [3]oteltrace.SpanStartOption
	call Call
}

type requestKey struct{}

// attrsPool holds the requests' scratch attribute arrays (room for a tool
// call's): a request borrows one from Begin to End instead of carrying
// (and zeroing) an array of its own, the largest thing a traced call
// allocated.
var attrsPool = sync.Pool{New: func() any {
	a := make([]attribute.KeyValue, 0, 24)
	return &a
}}

// Request starts timing an MCP request; its span opens at Begin, once the
// request's _meta has been read (the parent comes from there).
func (s *Session) Request(ctx context.Context, method string, id json.RawMessage) (context.Context, *Request) {
	r := &Request{s: s, start: time.Now(), method: method, id: id}
	return context.WithValue(ctx, requestKey{}, r), r
}

// Begin opens the span of the request in ctx (started with
// Session.Request): named "{mcp.method.name} {tool}" (or just the method),
// kind SERVER, the child of parent when that is a valid trace context,
// else of the session's span. version is the MCP revision the request
// speaks ("" when unknown). Calling it twice keeps the first span.
func Begin(ctx context.Context, parent Parent, version, tool string) context.Context {
	r, _ := ctx.Value(requestKey{}).(*Request)
	if r == nil || r.span != nil {
		return ctx
	}
	return r.begin(ctx, parent, version, tool)
}

func (r *Request) begin(ctx context.Context, parent Parent, version, tool string) context.Context {
	t, _ := ctx.Value(transportKey{}).(Transport)
	r.op = opKey{method: r.method, tool: tool, version: version, network: t.Network, protocol: t.Protocol, protocolVersion: t.Version}
	r.scratch = attrsPool.Get().(*[]attribute.KeyValue)
	r.attrs = r.op.append((*r.scratch)[:0])
	if id := requestID(r.id); id != "" {
		r.attrs = append(r.attrs, keyRequestID.String(id))
	}
	if t.SessionID != "" {
		r.attrs = append(r.attrs, keyMCPSession.String(t.SessionID))
	}
	name := r.method
	if tool != "" {
		name += " " + tool
	}
	// The attributes go on at the end (End), all at once: the sampler
	// decides on the parent alone.
	pctx, opts := r.s.parentCtx(ctx, parent, r.opts[:0])
	opts = append(opts, serverKind, oteltrace.WithTimestamp(r.start))
	ctx, r.span = r.s.p.tracer.Start(pctx, name, opts...)
	return ctx
}

// requestID is jsonrpc.request.id: the id's string, or a number as written;
// none for a null or missing id, as the conventions say.
func requestID(id json.RawMessage) string {
	if len(id) == 0 || string(id) == "null" {
		return ""
	}
	if id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}

// End ends the request's span once its answer is known: code and message
// are the JSON-RPC error it was answered with (code 0: a result). It
// records mcp.server.operation.duration.
func (r *Request) End(code int64, message string) {
	if r == nil {
		return
	}
	if r.span == nil {
		// Refused before its _meta could be read.
		r.begin(context.Background(), Parent{}, "", "")
	}
	attrs := r.attrs
	switch {
	case code != 0:
		r.op.errType, r.op.status = strconv.FormatInt(code, 10), true
		attrs = append(attrs, keyErrorType.String(r.op.errType), keyStatusCode.String(r.op.errType))
		r.span.SetStatus(codes.Error, message)
		// The tool name of a refused request is the client's to choose
		// (an unknown tool): not a metric attribute, or a client could
		// make a series per name.
		r.op.tool = ""
	case r.toolError:
		r.op.errType = errorToolError
	}
	r.span.SetAttributes(attrs...)
	r.span.End()
	if r.scratch != nil {
		// The span holds copies now; the strings the array still points
		// at go with the request.
		clear(attrs)
		*r.scratch = attrs[:0]
		attrsPool.Put(r.scratch)
		r.scratch, r.attrs = nil, nil
	}
	in := &r.s.p.inst
	k := r.op
	in.operation.Record(context.Background(), time.Since(r.start).Seconds(), in.ops.get(k, func() []attribute.KeyValue { return k.append(nil) }))
}

// Call is a tool call's span, as the engine sees it: the server's request
// span, or one of its own for a call that came through no MCP request
// (toolhost call).
type Call struct {
	s        *Session
	tool, id string
	span     oteltrace.Span
	// req is the request whose span this is; nil when the call opened its
	// own.
	req *Request
	// confirm is 1 once the confirmation stage started, 2 once it let the
	// call through.
	confirm int
	// first is the first attempt, once it failed (a retry records it).
	first *firstAttempt
	// attempt1 is the first attempt, the only one of a call not retried.
	attempt1 Attempt
}

// Call returns the span of one tool call with its gen_ai and toolhost
// attributes. Without a session (nothing exported) it returns ctx carrying
// parent, so upstreams and commands still continue the caller's trace,
// and a nil *Call.
func (s *Session) Call(ctx context.Context, tool, callID string, parent Parent) (context.Context, *Call) {
	if s == nil {
		if parent.Traceparent != "" {
			if sc := parse(parent.Traceparent, parent.Tracestate); sc.IsValid() {
				ctx = oteltrace.ContextWithRemoteSpanContext(ctx, sc)
			}
		}
		return ctx, nil
	}
	if r, _ := ctx.Value(requestKey{}).(*Request); r != nil && r.span != nil {
		c := &r.call
		if c.s != nil {
			c = &Call{}
		}
		*c = Call{s: s, tool: tool, id: callID, req: r, span: r.span}
		return ctx, c
	}
	c := &Call{s: s, tool: tool, id: callID}
	pctx, opts := s.parentCtx(ctx, parent, nil)
	ctx, c.span = s.p.tracer.Start(pctx, "tools/call "+tool,
		append(opts, oteltrace.WithAttributes(keyToolName.String(tool), keyOperation.String(ToolCall)))...)
	return ctx, c
}

// Stage names of the engine's stages that get spans of their own.
const (
	Validate = "validate"
	Confirm  = "confirm"
)

// Stage opens the span of one pipeline stage; the stage hands the call on
// with Handover, or ends it (refused, failed) and EndStage records why.
func (c *Call) Stage(ctx context.Context, name string) context.Context {
	ctx, _ = c.s.p.tracer.Start(ctx, name)
	if name == Confirm {
		c.confirm = 1
	}
	return ctx
}

// Handover ends the stage span current in ctx as the stage lets the call
// through, and returns ctx with the call's span current again: the next
// stages are the stage's siblings, not its children.
func (c *Call) Handover(ctx context.Context) context.Context {
	sp := oteltrace.SpanFromContext(ctx)
	if sp.SpanContext().SpanID() == c.span.SpanContext().SpanID() {
		return ctx
	}
	if c.confirm == 1 {
		c.confirm = 2
		sp.SetAttributes(keyConfirmed.String("confirmed"))
	}
	sp.End()
	return oteltrace.ContextWithSpan(ctx, c.span)
}

// EndStage ends the stage span of stageCtx (Stage's context); k is why the
// stage ended the call as the engine classified it (fault.None: it ended
// without an error). After Handover it does nothing.
func (c *Call) EndStage(stageCtx context.Context, k fault.Kind) {
	sp := oteltrace.SpanFromContext(stageCtx)
	if !sp.IsRecording() {
		return
	}
	failWith(sp, k, false)
	sp.End()
}

// Attempt is one attempt of a tool call and, for an upstream tool, the MCP
// client span of its call to the upstream.
type Attempt struct {
	c            *Call
	n            int
	start        time.Time
	span, client oteltrace.Span
}

// Attempt starts attempt n (1-based) of the call. Only a retried call's
// attempts get spans: the first attempt is the call itself until a second
// one starts, which records the first one's span (its start, end and
// error) before opening its own. For an upstream tool (server and remote
// set: the upstream and its name for the tool) it opens the CLIENT span
// "tools/call {remote}" of the call to it, whose context upstream clients
// pass on (Context).
func (c *Call) Attempt(ctx context.Context, n int, server, remote string) (context.Context, *Attempt) {
	a := &c.attempt1
	if n > 1 {
		a = &Attempt{}
	}
	*a = Attempt{c: c, n: n, start: time.Now()}
	if prev := c.first; n == 2 && prev != nil {
		_, sp := c.s.p.tracer.Start(ctx, "attempt", oteltrace.WithTimestamp(prev.start), oteltrace.WithAttributes(keyAttempt.Int(1)))
		failWith(sp, prev.kind, false)
		sp.End(oteltrace.WithTimestamp(prev.end))
	}
	if n > 1 {
		ctx, a.span = c.s.p.tracer.Start(ctx, "attempt", oteltrace.WithAttributes(keyAttempt.Int(n)))
	}
	if server != "" {
		ctx, a.client = c.s.p.tracer.Start(ctx, "tools/call "+remote, oteltrace.WithSpanKind(oteltrace.SpanKindClient),
			oteltrace.WithAttributes(keyMethod.String("tools/call"), keyToolName.String(remote), keyOperation.String(ToolCall), keyUpstream.String(server)))
	}
	return ctx, a
}

// firstAttempt is what a retry records of the call's first attempt.
type firstAttempt struct {
	start, end time.Time
	kind       fault.Kind
}

// End ends the attempt: k is why it failed as the engine classified what
// it returned (fault.None: it returned no error), toolError that the
// upstream answered with isError.
func (a *Attempt) End(k fault.Kind, toolError bool) {
	if a.client != nil {
		failWith(a.client, k, toolError)
		a.client.End()
	}
	if a.span != nil {
		failWith(a.span, k, toolError)
		a.span.End()
	}
	if a.n == 1 && k != fault.None {
		a.c.first = &firstAttempt{start: a.start, end: time.Now(), kind: k}
	}
}

// failWith records on sp why it failed: k (its error.type is the kind's
// audit string), or the upstream's isError.
func failWith(sp oteltrace.Span, k fault.Kind, toolError bool) {
	switch {
	case k != fault.None:
		sp.SetAttributes(keyErrorType.String(k.String()))
		sp.SetStatus(codes.Error, k.String())
	case toolError:
		sp.SetAttributes(keyErrorType.String(errorToolError))
		sp.SetStatus(codes.Error, errorToolError)
	}
}

// Outcome is how a tool call ended, as its span and metrics record it.
type Outcome struct {
	// Status is the call's audit status and Kind why it did not end in a
	// result (fault.None when it did): the engine's classification.
	Status audit.Status
	Kind   fault.Kind
	// IsError is set when the result the client gets has isError.
	IsError bool
	// Message is what the model reads of a failed call; on spans only
	// with --trace-args (it may quote arguments).
	Message string
	Retries int
	// Permission and Confirm are the policy's decision (read or write;
	// whether a human confirms).
	Permission string
	Confirm    bool
	// Rule and RuleEffect are the policy file's rule that decided the call
	// (its id; deny, confirm or allow), "" when no rule matched.
	Rule, RuleEffect string
	// Sandbox is how the commands the call started were confined.
	Sandbox string
	Unit    string
	ErrorID string
	// Args and Result are the redacted arguments and result (only read
	// when Session.Args is set).
	Args, Result json.RawMessage
}

// End records the call's outcome on its span (ending it unless it is the
// server's request span, which the server ends) and in the metrics.
func (c *Call) End(o Outcome) {
	if c == nil {
		return
	}
	var attrs []attribute.KeyValue
	if c.req != nil {
		attrs = c.req.attrs
	} else {
		attrs = make([]attribute.KeyValue, 0, 12)
	}
	attrs = append(attrs, keyToolCallID.String(c.id), keyStatus.String(string(o.Status)))
	// What is zero or false on nearly every call is left out (each
	// attribute costs every span's export a few allocations).
	if o.Retries > 0 {
		attrs = append(attrs, keyRetries.Int(o.Retries))
	}
	if o.Kind != fault.None {
		attrs = append(attrs, keyKind.String(o.Kind.String()))
	}
	if o.Permission != "" {
		attrs = append(attrs, keyPermission.String(o.Permission))
	}
	if o.Confirm {
		attrs = append(attrs, keyConfirm.Bool(true))
	}
	if o.Rule != "" {
		attrs = append(attrs, keyRule.String(o.Rule), keyRuleEffect.String(o.RuleEffect))
	}
	if o.Sandbox != "" {
		attrs = append(attrs, keySandbox.String(o.Sandbox))
	}
	if o.Unit != "" {
		attrs = append(attrs, keyUnit.String(o.Unit))
	}
	if o.ErrorID != "" {
		attrs = append(attrs, keyErrorID.String(o.ErrorID))
	}
	if c.s.p.args {
		if len(o.Args) > 0 {
			attrs = append(attrs, keyToolArgs.String(string(o.Args)))
		}
		if len(o.Result) > 0 {
			attrs = append(attrs, keyToolResult.String(string(o.Result)))
		}
	}
	if o.IsError {
		attrs = append(attrs, keyErrorType.String(errorToolError))
		desc := o.Kind.String()
		if c.s.p.args && o.Message != "" {
			desc = o.Message
		}
		c.span.SetStatus(codes.Error, desc)
	}
	if c.req != nil {
		// The server sets them with its own at the request's end.
		c.req.attrs, c.req.toolError = attrs, o.IsError
	} else {
		c.span.SetAttributes(attrs...)
		c.span.End()
	}
	tool := c.tool
	if o.Kind == fault.UnknownTool {
		// A name the client chose: not a metric attribute (see Request.End).
		tool = "_OTHER"
	}
	in := &c.s.p.inst
	in.calls.add(tool, keyStatus, string(o.Status))
	if o.Status == audit.StatusRejected {
		in.rejections.add(tool, keyKind, o.Kind.String())
	}
	if c.confirm > 0 {
		how := "confirmed"
		if c.confirm == 1 {
			how = o.Kind.String()
		}
		in.confirmations.add(tool, keyConfirmed, how)
	}
}

// Context returns the W3C traceparent and tracestate of the span current
// in ctx, "" when there is none: what an upstream MCP request carries in
// _meta and an upstream HTTP request in its headers.
func Context(ctx context.Context) (traceparent, tracestate string) {
	sc := oteltrace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String(), sc.TraceState().String()
}

// env returns env with TRACEPARENT and TRACESTATE naming the span current
// in ctx (and no other value of them).
func env(ctx context.Context, env []string) []string {
	tp, ts := Context(ctx)
	if tp == "" {
		return env
	}
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TRACEPARENT=") && !strings.HasPrefix(kv, "TRACESTATE=") {
			out = append(out, kv)
		}
	}
	out = append(out, "TRACEPARENT="+tp)
	if ts != "" {
		out = append(out, "TRACESTATE="+ts)
	}
	return out
}

// Procs returns owner as one attempt's tool sees it: every child it spawns
// or starts gets TRACEPARENT (and TRACESTATE) of ctx in its environment
// and, with a session, a span of its own ("spawn bash" until the command
// exits, "spawn unit" for starting a unit) that the child's own spans hang
// below. owner may be what Procs returned for an earlier attempt of the
// call: it is the owner that one wraps that gets wrapped.
func Procs(ctx context.Context, owner procs.Owner, s *Session) procs.Owner {
	if owner == nil {
		return nil
	}
	if t, ok := owner.(*tracedOwner); ok {
		// An earlier attempt's: this attempt's spans are its siblings.
		owner = t.Owner
	}
	return &tracedOwner{Owner: owner, ctx: ctx, s: s}
}

type tracedOwner struct {
	procs.Owner
	ctx context.Context
	s   *Session
}

// start opens a spawn span naming the program run: the held command's,
// not its holder's (procs.Spec.Program), else argv[0].
func (o *tracedOwner) start(name, program string, argv []string) (context.Context, oteltrace.Span) {
	if o.s == nil {
		return o.ctx, nil
	}
	attrs := []attribute.KeyValue{}
	if program == "" && len(argv) > 0 {
		program = argv[0]
	}
	if program != "" {
		attrs = append(attrs, keyExecutable.String(filepath.Base(program)))
	}
	return o.s.p.tracer.Start(o.ctx, name, oteltrace.WithAttributes(attrs...))
}

func (o *tracedOwner) Spawn(spec procs.Spec) (*procs.Child, error) {
	name, _, _ := strings.Cut(spec.Name, " ")
	ctx, sp := o.start("spawn "+name, spec.Program, spec.Argv)
	spec.Env = env(ctx, spec.Env)
	child, err := o.Owner.Spawn(spec)
	if sp == nil {
		return child, err
	}
	if err != nil {
		spawnFailed(sp, err)
		sp.End()
		return nil, err
	}
	sp.SetAttributes(keyPID.Int(child.PID))
	o.s.p.spawns.Add(1)
	go func() {
		defer o.s.p.spawns.Done()
		<-child.Done()
		code, signal, _ := child.Exit()
		sp.SetAttributes(keyExitCode.Int(code))
		if signal != "" {
			sp.SetAttributes(keySignal.String(signal))
		}
		sp.End()
	}()
	return child, nil
}

func (o *tracedOwner) Start(spec procs.UnitSpec) (*procs.Proc, error) {
	ctx, sp := o.start("spawn unit", "", spec.Argv)
	spec.Env = env(ctx, spec.Env)
	p, err := o.Owner.Start(spec)
	if sp == nil {
		return p, err
	}
	sp.SetAttributes(keyUnit.String(spec.Unit))
	if err == nil {
		sp.SetAttributes(keyPID.Int(p.PID))
	} else {
		spawnFailed(sp, err)
	}
	sp.End()
	return p, err
}

// spawnFailed records on a spawn's span that the command did not start:
// error.type is the kind the refusal carries when confinement refused it
// (a fault.Rejection, as the engine reads it too), else _OTHER.
func spawnFailed(sp oteltrace.Span, err error) {
	k := "_OTHER"
	if rej, ok := errors.AsType[fault.Rejection](err); ok {
		k = rej.RejectionKind().String()
	}
	sp.SetAttributes(keyErrorType.String(k))
	sp.SetStatus(codes.Error, k)
}
