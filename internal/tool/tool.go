package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// Effect is what a tool does to the world; it decides the MCP annotations and
// the default permission when the policy file does not list the tool.
type Effect int

const (
	// ReadOnly tools change nothing on disk (readOnlyHint).
	ReadOnly Effect = iota
	// Additive tools write, but never destroy earlier state (append, create).
	Additive
	// Destructive tools may overwrite or remove earlier state (destructiveHint).
	Destructive
)

// String returns the default policy permission for the effect.
func (e Effect) String() string {
	if e == ReadOnly {
		return "read"
	}
	return "write"
}

// NamePattern is the rule every tool name follows (MCP and Anthropic API),
// as the messages that refuse a name spell it; ValidName checks it.
var NamePattern = lazyre.New(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidName reports whether name matches NamePattern. It is written out
// because the registry checks every built-in tool's name at start, where
// compiling the regexp would cost more than all the checks together.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Spec describes a tool to clients and to the engine.
type Spec struct {
	Name        string
	Title       string
	Description string
	Effect      Effect
	// Idempotent is true when repeating a call with the same input leaves the
	// same state (idempotentHint).
	Idempotent bool
	// Timeout is the tool's default; the policy file may override it.
	Timeout time.Duration
	// Commands returns the commands a call with these (schema-valid)
	// arguments would start; the engine runs the Bash guard on each before
	// the tool executes. nil for tools that start none.
	Commands func(args json.RawMessage) []Command
	// Source is "builtin" or "mcp:<server>".
	Source string
	// Remote is an upstream tool's name at its server (the served Name is
	// "<server>__<tool>"); empty for a built-in.
	Remote       string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// Withheld, when set, keeps a registered tool from every agent: it is
	// listed nowhere and every call is refused with its reason before
	// anything runs (policy.File.Access decides so).
	Withheld *Withheld
}

// Withheld says why a registered tool is not offered: an upstream tool
// whose definition differs from the one pinned in the project (fault.Pin),
// or whose server is being restarted (fault.Unavailable).
type Withheld struct {
	Kind fault.Kind
	// Reason is what the model reads when it calls the tool anyway: what
	// changed or failed, and what makes the tool come back.
	Reason string
}

// Command is a command a tool would start: shell text run with bash -c
// (Script), or an argument vector run without a shell (Argv).
type Command struct {
	Script string
	Argv   []string
	// Env is the environment an Argv command is given.
	Env map[string]string
	// Dir is where the command starts, relative to the project dir; ""
	// for the agent's working directory.
	Dir string
	// Where names the input that holds it ("units[1].argv"), for the
	// message of a refusal.
	Where string
}

// ScriptField is Spec.Commands for a tool whose input field name holds a
// shell script.
func ScriptField(name string) func(json.RawMessage) []Command {
	return func(args json.RawMessage) []Command {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(args, &m)
		var script string
		_ = json.Unmarshal(m[name], &script)
		return []Command{{Script: script}}
	}
}

// Annotations are the MCP tool annotations derived from the effect.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

// Annotations returns the MCP annotations of the spec.
func (s *Spec) Annotations() Annotations {
	return Annotations{
		Title:           s.Title,
		ReadOnlyHint:    s.Effect == ReadOnly,
		DestructiveHint: s.Effect == Destructive,
		IdempotentHint:  s.Idempotent || s.Effect == ReadOnly,
		OpenWorldHint:   s.Source != "" && s.Source != "builtin",
	}
}

// Tool is what the registry holds and the engine runs.
type Tool interface {
	Spec() *Spec
	// Call runs the tool on arguments that already passed schema validation.
	// It returns the structured result as JSON.
	Call(ctx context.Context, c *callctx.Ctx, args json.RawMessage) (Result, error)
}

// Result is a successful (possibly ok:false) tool result.
type Result struct {
	// Structured is the JSON object sent as structuredContent and as text.
	Structured json.RawMessage
	// Failed is true for an expected failure (ok:false).
	Failed bool
	// Reason is the ok:false reason.
	Reason string
	// ErrorID names the log line that keeps the error behind an ok:false
	// reason whole (a Fail with an error whose words withhold its text).
	ErrorID string
	// Raw, when set, is a complete MCP CallToolResult passed through as is
	// (upstream tools).
	Raw json.RawMessage
	// UpstreamError is true when Raw carries isError:true: the call reached
	// the upstream server and it reported a failure. It is audited as an
	// error while the result itself still goes to the client unchanged.
	UpstreamError bool
	// Sandbox says how the commands the call started were confined (the
	// audit row's "sandbox"); empty when it started none.
	Sandbox string
}

// Confined is implemented by the output of a tool that starts commands:
// how they were confined, for the audit row.
type Confined interface {
	AuditSandbox() string
}

// Status is embedded in every output struct: ok, and the reason when not ok.
type Status struct {
	OK     bool   `json:"ok" jsonschema_description:"true when the tool did what was asked; false for an expected failure, explained in reason"`
	Reason string `json:"reason,omitempty" jsonschema_description:"why ok is false, and what to change"`
}

func (s Status) outcome() (bool, string) { return s.OK, s.Reason }

type outcomer interface{ outcome() (bool, string) }

// Failure is an expected failure: the model sees {ok:false, reason}.
type Failure struct {
	// Reason is the tool's own words for what went wrong.
	Reason string
	// Err, when set, is the error behind the failure: the model reads what
	// fault.Explain makes of it after Reason, the log keeps it whole.
	Err error
}

func (f *Failure) Error() string {
	if f.Err == nil {
		return f.Reason
	}
	return f.Reason + ": " + f.Err.Error()
}

// Fail returns an expected failure. The reason is format's text in the
// tool's own words; err (nil when the failure is all in those words) is the
// error behind it, which the model reads only as fault.Explain words it
// (after the reason, with an error id under which the log keeps err whole
// when the words stand in for its text). An error's text is never an
// argument of format: an OS, network or library message may carry paths
// outside the project, addresses or secrets.
func Fail(err error, format string, args ...any) error {
	return &Failure{Reason: fmt.Sprintf(format, args...), Err: err}
}

// Explain is what the model reads of err where a tool reports it in its
// result rather than failing the call (a unit that did not start, a step
// whose request failed): fault.Explain's words and, when they stand in for
// err's text, the error id under which c's log keeps err whole.
func Explain(c *callctx.Ctx, err error) string {
	words, _ := explain(c, "", err)
	return words
}

// explain is the one place a tool's error becomes words for the model and
// a log line: the error id is made and logged only when the words withhold
// something.
func explain(c *callctx.Ctx, toolName string, err error) (words, errorID string) {
	var f *Failure
	if errors.As(err, &f) {
		// A helper's expected failure reported in a result field: its
		// reason and, as Call would give it, the error behind it.
		if f.Err == nil {
			return f.Reason, ""
		}
		words, errorID = explain(c, toolName, f.Err)
		return f.Reason + ": " + words, errorID
	}
	words = fault.Explain(err)
	if !fault.Withheld(err) {
		return words, ""
	}
	errorID = callctx.NewCallID()
	if c != nil {
		ev := c.Log.Error().Str("event", "tool_failure").Str("error_id", errorID).Str("call_id", c.CallID)
		if toolName != "" {
			ev = ev.Str("tool", toolName)
		}
		ev.Err(err).Msg("an error behind a tool's result")
	}
	return words + " (error id " + errorID + ")", errorID
}

// Func is the typed function behind a tool.
type Func[In, Out any] func(ctx context.Context, c *callctx.Ctx, in In) (Out, error)

type typed[In, Out any] struct {
	once sync.Once
	spec Spec
	fn   Func[In, Out]
	// bound bounds the results of a tool whose output has paged fields
	// (bound.go); nil for the others.
	bound *bounded
}

// New builds a Tool from a typed function. The schemas are reflected from In
// and Out once, on the first Spec call (the registry makes that call for
// every tool at start, in parallel).
func New[In, Out any](spec Spec, fn Func[In, Out]) Tool {
	if spec.Source == "" {
		spec.Source = "builtin"
	}
	return &typed[In, Out]{spec: spec, fn: fn, bound: boundsOf[In, Out](spec.Name)}
}

// NameOf returns t's name without reflecting its schemas.
func NameOf(t Tool) string {
	if n, ok := t.(interface{ name() string }); ok {
		return n.name()
	}
	return t.Spec().Name
}

func (t *typed[In, Out]) name() string { return t.spec.Name }

// UseSchemas gives t its input and output schemas ready-made, so that Spec
// does not reflect them. It returns false when t is not built by New or has
// reflected already. The caller guarantees the schemas are what reflection
// would produce (tools/all checks its embedded copies in a test).
func UseSchemas(t Tool, in, out json.RawMessage) bool {
	p, ok := t.(interface {
		useSchemas(in, out json.RawMessage) bool
	})
	return ok && p.useSchemas(in, out)
}

func (t *typed[In, Out]) useSchemas(in, out json.RawMessage) bool {
	used := false
	t.once.Do(func() {
		t.spec.InputSchema, t.spec.OutputSchema = in, out
		used = true
	})
	return used
}

func (t *typed[In, Out]) Spec() *Spec {
	t.once.Do(func() {
		var in In
		var out Out
		t.spec.InputSchema = Reflect(in, false)
		t.spec.OutputSchema = Reflect(out, true)
	})
	return &t.spec
}

func (t *typed[In, Out]) Call(ctx context.Context, c *callctx.Ctx, args json.RawMessage) (Result, error) {
	var in In
	if len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return Result{}, &ValidationError{Field: "(root)", Reason: err.Error()}
		}
	}
	out, err := t.fn(ctx, c, in)
	if err != nil {
		return failed(c, t.spec.Name, err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return Result{}, fmt.Errorf("encode %s result: %w", t.spec.Name, err)
	}
	if t.bound != nil {
		if b, err = t.bound.apply(c, t.spec.Name, in, reflect.ValueOf(out), b); err != nil {
			return failed(c, t.spec.Name, err)
		}
	}
	r := Result{Structured: b}
	if cf, ok := any(out).(Confined); ok {
		r.Sandbox = cf.AuditSandbox()
	}
	if o, ok := any(out).(outcomer); ok {
		if okay, reason := o.outcome(); !okay {
			r.Failed, r.Reason = true, reason
		}
	}
	return r, nil
}

// failed is the result of a call that ended in err: an expected failure
// ({ok:false, reason}) when err is a Failure, else err itself.
func failed(c *callctx.Ctx, toolName string, err error) (Result, error) {
	var f *Failure
	if errors.As(err, &f) {
		reason, id := explain(c, toolName, f)
		b, _ := json.Marshal(Status{OK: false, Reason: reason})
		return Result{Structured: b, Failed: true, Reason: reason, ErrorID: id}, nil
	}
	return Result{}, err
}

var reflector = jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true}

// Reflect returns the JSON Schema of v's type: a top-level object, no $ref,
// additionalProperties false. For outputs only "ok" is required, so that an
// ok:false result still matches the schema.
func Reflect(v any, output bool) json.RawMessage {
	t := reflect.TypeOf(v)
	s := reflector.ReflectFromType(t)
	s.Version = ""
	s.ID = ""
	if s.Type == "" {
		s.Type = "object"
	}
	if output {
		s.Required = nil
		if s.Properties != nil {
			if _, ok := s.Properties.Get("ok"); ok {
				s.Required = []string{"ok"}
			}
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tool: reflect schema of %v: %v", t, err))
	}
	return b
}
