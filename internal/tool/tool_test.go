package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
)

type greetIn struct {
	Name  string `json:"name" jsonschema:"minLength=1" jsonschema_description:"who to greet"`
	Times int    `json:"times,omitempty" jsonschema_description:"how often"`
}

type greetOut struct {
	Status
	Text string `json:"text,omitempty" jsonschema_description:"the greeting"`
}

// greeter fails in the ways a tool can, chosen by the name it is given.
func greeter(calls *atomic.Int32) Tool {
	return New(Spec{Name: "greet", Description: "greets"}, func(_ context.Context, _ *callctx.Ctx, in greetIn) (greetOut, error) {
		calls.Add(1)
		switch in.Name {
		case "nobody":
			return greetOut{}, Fail(nil, "nobody to greet; give a %s", "name")
		case "unreadable":
			return greetOut{}, Fail(&fs.PathError{Op: "open", Path: "/home/ada/.secret/names", Err: syscall.EACCES}, "the names cannot be read")
		case "quiet":
			return greetOut{Status: Status{Reason: "too quiet to greet"}}, nil
		case "broken":
			return greetOut{}, errors.New("disk on fire")
		}
		return greetOut{Status: Status{OK: true}, Text: strings.Repeat("hi "+in.Name+" ", max(in.Times, 1))}, nil
	})
}

// TestFailExplainsTheErrorBehindIt: the model reads the tool's words and
// fault.Explain's, never the error's text; the log keeps the error whole
// under the error id the reason and the result carry.
func TestFailExplainsTheErrorBehindIt(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var log bytes.Buffer
	c := &callctx.Ctx{CallID: "call-1", Services: callctx.Services{Log: zerolog.New(&log)}}
	r, err := greeter(&calls).Call(context.Background(), c, json.RawMessage(`{"name":"unreadable"}`))
	if err != nil || !r.Failed || r.ErrorID == "" {
		t.Fatalf("Call = %+v, %v; want an ok:false result with an error id", r, err)
	}
	want := "the names cannot be read: the operating system does not let toolhost access a file; "
	if !strings.HasPrefix(r.Reason, want) || !strings.HasSuffix(r.Reason, "(error id "+r.ErrorID+")") {
		t.Fatalf("reason %q; want it to start %q and end with the error id", r.Reason, want)
	}
	for _, leak := range []string{"/home/ada", "secret", "permission denied"} {
		if strings.Contains(r.Reason, leak) || strings.Contains(string(r.Structured), leak) {
			t.Fatalf("result %s leaks %q", r.Structured, leak)
		}
	}
	line := log.String()
	for _, w := range []string{`"error_id":"` + r.ErrorID + `"`, `"call_id":"call-1"`, `"tool":"greet"`, "/home/ada/.secret/names: permission denied"} {
		if !strings.Contains(line, w) {
			t.Fatalf("log %s; want %s", line, w)
		}
	}
	if got := Explain(c, fault.Content(errors.New("line 2: no name"))); got != "line 2: no name" {
		t.Fatalf("Explain(content) = %q: a parser's verdict is whole and needs no id", got)
	}
}

func TestNewCallsTheTypedFunction(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	tl := greeter(&calls)
	cases := []struct {
		name   string
		args   string
		failed bool
		reason string
		out    string
		err    string
	}{
		{name: "a result", args: `{"name":"ada","times":2}`, out: `{"ok":true,"text":"hi ada hi ada "}`},
		{name: "no arguments at all", args: ``, out: `{"ok":true,"text":"hi  "}`},
		{name: "Fail is an expected failure", args: `{"name":"nobody"}`, failed: true, reason: "nobody to greet; give a name",
			out: `{"ok":false,"reason":"nobody to greet; give a name"}`},
		{name: "ok false in the output is an expected failure", args: `{"name":"quiet"}`, failed: true, reason: "too quiet to greet",
			out: `{"ok":false,"reason":"too quiet to greet"}`},
		{name: "another error is the tool's error", args: `{"name":"broken"}`, err: "disk on fire"},
		{name: "arguments that do not decode are a validation error", args: `{"name":7}`, err: "(root): json: cannot unmarshal number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tl.Call(context.Background(), nil, json.RawMessage(tc.args))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("Call = %+v, %v; want error %q", r, err, tc.err)
				}
				return
			}
			if err != nil || r.Failed != tc.failed || r.Reason != tc.reason || string(r.Structured) != tc.out {
				t.Fatalf("Call = %+v (%s), %v; want failed %t, reason %q, %s", r, r.Structured, err, tc.failed, tc.reason, tc.out)
			}
		})
	}
	before := calls.Load()
	var ve *ValidationError
	if _, err := tl.Call(context.Background(), nil, json.RawMessage(`{"name":`)); !errors.As(err, &ve) || ve.Field != "(root)" {
		t.Fatalf("broken JSON: %v, want a ValidationError of (root)", err)
	}
	if calls.Load() != before {
		t.Fatal("the function ran on arguments that did not decode")
	}
}

func TestSchemas(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	tl := greeter(&calls)
	if NameOf(tl) != "greet" {
		t.Fatalf("NameOf = %q", NameOf(tl))
	}
	s := tl.Spec()
	if s.Source != "builtin" {
		t.Errorf("Source = %q; New defaults it to builtin", s.Source)
	}
	var in, out struct {
		Type                 string                     `json:"type"`
		Ref                  string                     `json:"$ref"`
		Schema               string                     `json:"$schema"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
		Properties           map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(s.InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(s.OutputSchema, &out); err != nil {
		t.Fatal(err)
	}
	if in.Type != "object" || in.Ref != "" || in.Schema != "" || in.AdditionalProperties == nil || *in.AdditionalProperties ||
		strings.Join(in.Required, ",") != "name" || !strings.Contains(string(in.Properties["name"]), `"description":"who to greet"`) ||
		!strings.Contains(string(in.Properties["name"]), `"minLength":1`) {
		t.Errorf("input schema %s: want a top-level object, no $ref or $schema, no extra properties, name required with its tags", s.InputSchema)
	}
	if out.Type != "object" || strings.Join(out.Required, ",") != "ok" || out.Properties["text"] == nil || out.Properties["reason"] == nil {
		t.Errorf("output schema %s: want only ok required, so an ok:false result matches it", s.OutputSchema)
	}
	// Schemas reflect once; UseSchemas after that is refused.
	if tl.Spec() != s || UseSchemas(tl, json.RawMessage(`{}`), nil) {
		t.Error("the spec was rebuilt, or UseSchemas replaced schemas already reflected")
	}
	fresh := greeter(&calls)
	in2, out2 := json.RawMessage(`{"type":"object","x":1}`), json.RawMessage(`{"type":"object","y":2}`)
	if !UseSchemas(fresh, in2, out2) || string(fresh.Spec().InputSchema) != string(in2) || string(fresh.Spec().OutputSchema) != string(out2) {
		t.Error("UseSchemas before the first Spec did not supply the schemas")
	}
}

func TestAnnotations(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spec Spec
		want Annotations
	}{
		{Spec{Title: "Read", Effect: ReadOnly, Source: "builtin"}, Annotations{Title: "Read", ReadOnlyHint: true, IdempotentHint: true}},
		{Spec{Effect: Additive, Source: "builtin"}, Annotations{}},
		{Spec{Effect: Additive, Idempotent: true}, Annotations{IdempotentHint: true}},
		{Spec{Effect: Destructive, Source: "mcp:gh"}, Annotations{DestructiveHint: true, OpenWorldHint: true}},
	}
	for _, tc := range cases {
		if got := tc.spec.Annotations(); got != tc.want {
			t.Errorf("%+v: Annotations = %+v, want %+v", tc.spec, got, tc.want)
		}
	}
	if ReadOnly.String() != "read" || Additive.String() != "write" || Destructive.String() != "write" {
		t.Error("an effect's default permission is wrong")
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  fault.Rejection
		msg  string
		kind fault.Kind
	}{
		{&ValidationError{Field: "items[2].id", Reason: "does not match pattern"}, "items[2].id: does not match pattern", fault.Validation},
		{&ValidationError{Field: "text", Reason: "text: is required; fix the arguments"}, "text: is required; fix the arguments", fault.Validation},
		{&ValidationError{Reason: "give a or b"}, "give a or b", fault.Validation},
		{&PermissionError{Tool: "bash", Reason: "tool bash is not allowed for agent devloop-pm"}, "tool bash is not allowed for agent devloop-pm", fault.Policy},
	}
	for _, tc := range cases {
		if tc.err.Error() != tc.msg || tc.err.RejectionKind() != tc.kind {
			t.Errorf("%#v: %q / %v; want %q / %v", tc.err, tc.err.Error(), tc.err.RejectionKind(), tc.msg, tc.kind)
		}
	}
	if Transient(nil) != nil {
		t.Error("Transient(nil) is not nil")
	}
	inner := errors.New("connection refused")
	var te *TransientError
	if err := Transient(inner); !errors.As(err, &te) || !errors.Is(err, inner) || err.Error() != "connection refused" {
		t.Errorf("Transient = %v", err)
	}
	for _, name := range []string{"mcp_tool-1", "A", "x9", strings.Repeat("x", 64), "", "a.b", "a b", "é", "a/b", strings.Repeat("x", 65), "tool\n"} {
		want := name != "" && len(name) <= 64 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
		if NamePattern().MatchString(name) != want || ValidName(name) != want {
			t.Errorf("%q: NamePattern %t, ValidName %t, want %t", name, NamePattern().MatchString(name), ValidName(name), want)
		}
	}
}
