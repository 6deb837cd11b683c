package rules

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/tool"
)

// What the engine, the policy and the CLI share of rules, apart from CEL
// (rules.go and the files it uses), which BenchmarkStartCost's builds can
// leave out (-tags bench_no_rules).

// Effect is what a matching rule does to a call.
type Effect string

// The effects a rule may have.
const (
	// Deny refuses the call with the rule's reason.
	Deny Effect = "deny"
	// Confirm makes a human confirm the call, through the engine's confirm
	// stage (or the CLI's prompt, in the hook).
	Confirm Effect = "confirm"
	// Allow lets the call go on without a human's confirmation, even when
	// the tool's entry says confirm; every other check still applies.
	Allow Effect = "allow"
)

// Rule is one entry of the policy file's ordered "rules" list.
type Rule struct {
	// ID names the rule in messages, audit rows and `policy explain`.
	ID string `json:"id"`
	// Tool is a tool name or a doublestar glob over names ("github__*",
	// "{bash,Bash}"); Claude CLI's built-ins have their own names (Bash,
	// Write, Edit, …).
	Tool string `json:"tool"`
	// When is a CEL expression; the rule matches when it is true. Empty
	// matches every call of the tool.
	When   string `json:"when,omitempty"`
	Effect Effect `json:"effect"`
	// Reason is what the model (deny) or the human (confirm) reads.
	Reason string `json:"reason,omitempty"`
}

// Tool is what the rules know of a tool when they are compiled.
type Tool struct {
	Name string
	// InputSchema types args for rules that name the tool.
	InputSchema json.RawMessage
	// Commands is set when the tool runs commands, which cmd describes.
	Commands bool
}

// Options are what the rules are compiled against.
type Options struct {
	// Tools are the tools whose input schemas type args: toolhost's
	// built-ins and Claude CLI's (Catalog). A rule naming another tool (an
	// upstream tool) or a glob sees args as a map(string, dyn).
	Tools []Tool
	// ProjectDir relates absolute paths to the project in glob().
	ProjectDir string
}

// Limits of a rule.
const (
	// MaxWhenLen is the longest when expression, in bytes.
	MaxWhenLen = 4096
	// EvalTimeout bounds the evaluation of a call's rules that iterate: a
	// rule that iterates large arguments twice over cannot be made to run
	// for long by them (comprehensions check it every interruptEvery
	// iterations); a rule without iteration is bounded by its length.
	// Going over it is an evaluation error. (CEL's cost limit is no use
	// here: its tracker needs every list's size, and an open list of cmd
	// has none.)
	EvalTimeout    = 250 * time.Millisecond
	interruptEvery = 64
)

// Problem is one rule that does not compile.
type Problem struct {
	// Index is the rule's position in the list (0-based).
	Index int    `json:"index"`
	ID    string `json:"id,omitempty"`
	// Line and Col locate the problem in when (1-based); 0 when it is not
	// in when.
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	Msg  string `json:"error"`
}

func (p Problem) String() string {
	s := fmt.Sprintf("rules[%d]", p.Index)
	if p.ID != "" {
		s += fmt.Sprintf(" (id %q)", p.ID)
	}
	if p.Line > 0 {
		s += fmt.Sprintf(": when %d:%d", p.Line, p.Col)
	}
	return s + ": " + p.Msg
}

// CompileError lists every rule that does not compile.
type CompileError struct{ Problems []Problem }

func (e *CompileError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// Input is one call as the rules see it.
type Input struct {
	Tool, Agent, Unit, Project string
	Now                        time.Time
	// Args are the call's arguments, already validated, decoded with
	// numbers as json.Number (what the engine's schema validation decoded;
	// wirejson.DecodeAny). They are converted in place.
	Args any
	// Commands returns the commands the call would run, for cmd; it is
	// called only when a rule that reads cmd is evaluated. nil for a tool
	// that runs none.
	Commands func() []tool.Command
	// Programs finds the files the commands' words run (progid), so that
	// cmd names programs by what they are; nil names them as written.
	Programs bashguard.Programs
}

// Verdict is what the rules decided for a call.
type Verdict struct {
	// Rule is the id of the rule that decided; "" when none matched (the
	// policy file's entry for the tool decides alone).
	Rule   string `json:"rule,omitempty"`
	Index  int    `json:"index"`
	Effect Effect `json:"effect,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Unsure is set when the rule decided although its condition could not
	// be evaluated to true: it depends on a fact of cmd the shell parser
	// cannot know, or its evaluation failed. It says which. Only a deny or
	// confirm rule decides that way: an allow rule must be sure.
	Unsure string `json:"unsure,omitempty"`
}

// Decided reports whether a rule decided.
func (v Verdict) Decided() bool { return v.Rule != "" }

// Step is one rule's evaluation, for `toolhost policy explain`.
type Step struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
	// Result is true, false, unknown (it depends on what the shell parser
	// cannot know) or error.
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
	// Decides is set on the rule that decided.
	Decides bool `json:"decides,omitempty"`
}

// Refusal is a call a deny rule refused.
type Refusal struct {
	Tool    string
	Verdict Verdict
}

func (e *Refusal) Error() string {
	msg := fmt.Sprintf("%s refused by policy rule %s: %s", e.Tool, e.Verdict.Rule, e.Verdict.Reason)
	if e.Verdict.Unsure != "" {
		msg += " (" + e.Verdict.Unsure + ")"
	}
	return msg
}

// RejectionKind makes a refusal a fault.Rejection of kind policy; the
// audit row's rule names the rule.
func (e *Refusal) RejectionKind() fault.Kind { return fault.Policy }

// Ask is what a human reads of a call a confirm rule holds for them.
func (v Verdict) Ask() string {
	msg := fmt.Sprintf("policy rule %s asks for a human's confirmation: %s", v.Rule, v.Reason)
	if v.Unsure != "" {
		msg += " (" + v.Unsure + ")"
	}
	return msg
}
