package integrator

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// ParsePlaceholderInput is the parse_placeholder request.
type ParsePlaceholderInput struct {
	Text  *string         `json:"text,omitempty" jsonschema:"maxLength=1048576" jsonschema_description:"text whose placeholders to resolve: {{port:<unit>}}, {{var:<name>}}, {{env:<NAME>}}, {{uuid}} (give text or value)"`
	Value json.RawMessage `json:"value,omitempty" jsonschema_description:"any JSON value; placeholders in its strings are resolved recursively, and a string that is exactly one placeholder takes the value's own type (a port becomes a number); object keys are left as they are (give text or value)"`
	Vars  map[string]any  `json:"vars,omitempty" jsonschema_description:"values for {{var:<name>}}"`
}

// Unresolved is a placeholder that could not be resolved.
type Unresolved struct {
	Placeholder string `json:"placeholder" jsonschema_description:"the placeholder as written"`
	Path        string `json:"path,omitempty" jsonschema_description:"JSON pointer of the string holding it (value mode, run_case)"`
	Reason      string `json:"reason" jsonschema_description:"why it could not be resolved and what to change"`
}

// ParsePlaceholderOutput is the parse_placeholder result.
type ParsePlaceholderOutput struct {
	tool.Status
	Text       *string         `json:"text,omitempty" jsonschema_description:"the resolved text (unresolved placeholders stay as written and are listed)"`
	Value      json.RawMessage `json:"value,omitempty" jsonschema_description:"the resolved value"`
	Resolved   int             `json:"resolved" jsonschema_description:"number of placeholders resolved"`
	Unresolved []Unresolved    `json:"unresolved,omitempty" jsonschema_description:"placeholders left unresolved; ok is false when there is any"`
}

// ParsePlaceholder is the parse_placeholder tool.
func ParsePlaceholder() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "parse_placeholder",
		Title: "Resolve placeholders",
		Description: "Resolve {{port:<unit>}} (from .toolhost/ports.json), {{var:<name>}} (from vars), {{env:<NAME>}} (only " +
			"names on the policy's env allow-list) and {{uuid}} in a text or, recursively, in the strings of a JSON value. " +
			"Every placeholder that cannot be resolved is listed with the reason, and ok is false.",
		Effect: tool.ReadOnly,
	}, parsePlaceholder)
}

func parsePlaceholder(_ context.Context, c *callctx.Ctx, in ParsePlaceholderInput) (ParsePlaceholderOutput, error) {
	hasValue := len(in.Value) > 0
	if (in.Text != nil) == hasValue {
		return ParsePlaceholderOutput{}, &tool.ValidationError{Field: "text", Reason: "give exactly one of text or value"}
	}
	r := newResolver(c, in.Vars)
	var out ParsePlaceholderOutput
	if in.Text != nil {
		s := r.text(*in.Text, "")
		out.Text = &s
	} else {
		b, err := r.rawJSON(in.Value, "")
		if err != nil {
			return out, &tool.ValidationError{Field: "value", Reason: err.Error()}
		}
		out.Value = b
	}
	out.Resolved, out.Unresolved = r.resolved, r.unresolved
	out.OK = len(r.unresolved) == 0
	if !out.OK {
		out.Reason = r.summary()
	}
	return out, nil
}

// placeholderRE matches {{kind}} and {{kind:arg}}.
var placeholderRE = lazyre.New(`\{\{\s*([A-Za-z]+)\s*(?::\s*([^{}]*?)\s*)?\}\}`)

// resolver resolves placeholders for one request (one run_case step).
type resolver struct {
	c     *callctx.Ctx
	vars  map[string]any
	ports map[string]Reservation
	// portsWhy is why integration/ports.json could not be read, once.
	portsWhy   string
	portsRead  bool
	resolved   int
	unresolved []Unresolved
}

func newResolver(c *callctx.Ctx, vars map[string]any) *resolver {
	return &resolver{c: c, vars: vars}
}

func (r *resolver) summary() string {
	parts := make([]string, len(r.unresolved))
	for i, u := range r.unresolved {
		parts[i] = u.Placeholder + ": " + u.Reason
	}
	return fmt.Sprintf("%d unresolved placeholder(s): %s", len(parts), strings.Join(parts, "; "))
}

// lookup resolves one placeholder to a value, or says why it cannot.
func (r *resolver) lookup(kind, arg string) (any, string) {
	switch kind {
	case "port":
		if arg == "" {
			return nil, "name the unit: {{port:<unit>}}"
		}
		if !r.portsRead {
			pf, err := loadPorts(r.c)
			r.ports, r.portsRead = pf.Reservations, true
			if err != nil {
				r.portsWhy = "cannot read " + PortsPath + ": " + tool.Explain(r.c, err)
			}
		}
		if r.portsWhy != "" {
			return nil, r.portsWhy
		}
		if res, ok := r.ports[arg]; ok && res.Port > 0 {
			return res.Port, ""
		}
		return nil, fmt.Sprintf("no port reserved for unit %s in %s; call port_picker with units [%q] first", arg, PortsPath, arg)
	case "var":
		if arg == "" {
			return nil, "name the variable: {{var:<name>}}"
		}
		if v, ok := r.vars[arg]; ok {
			return v, ""
		}
		return nil, fmt.Sprintf("variable %s is not defined; pass it in vars (or capture it in an earlier run_case step)", arg)
	case "env":
		return r.env(arg)
	case "uuid":
		if arg != "" {
			return nil, "{{uuid}} takes no argument"
		}
		return newUUID(), ""
	}
	return nil, fmt.Sprintf("unknown placeholder kind %q; use port, var, env or uuid", kind)
}

// env expands only allow-listed variables, and never echoes a value in a
// message.
func (r *resolver) env(name string) (any, string) {
	if name == "" {
		return nil, "name the variable: {{env:<NAME>}}"
	}
	if !slices.ContainsFunc(r.c.Settings.EnvAllowList, func(n string) bool { return strings.EqualFold(n, name) }) {
		list := strings.Join(r.c.Settings.EnvAllowList, ", ")
		if list == "" {
			list = "none"
		}
		return nil, fmt.Sprintf("%s is not on the env allow-list (env_allowlist in the tool policy: %s); only those variables can be expanded", name, list)
	}
	v, ok := r.c.Getenv(name)
	if !ok {
		return nil, fmt.Sprintf("%s is allowed but not set in toolhost's environment", name)
	}
	return v, ""
}

// one resolves the placeholder m (its kind and arg as matched), found in
// the string at path, and counts it as resolved or lists it as unresolved.
func (r *resolver) one(m, kind, arg, path string) (any, bool) {
	v, reason := r.lookup(strings.ToLower(kind), arg)
	if reason != "" {
		r.unresolved = append(r.unresolved, Unresolved{Placeholder: m, Path: path, Reason: reason})
		return nil, false
	}
	r.resolved++
	return v, true
}

// text resolves every placeholder of s into text.
func (r *resolver) text(s, path string) string {
	return placeholderRE().ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholderRE().FindStringSubmatch(m)
		if v, ok := r.one(m, sub[1], sub[2], path); ok {
			return stringify(v)
		}
		return m
	})
}

// str resolves a JSON string: exactly one placeholder takes the value's own
// type, anything else stays text.
func (r *resolver) str(s, path string) any {
	if loc := placeholderRE().FindStringSubmatchIndex(s); loc != nil && loc[0] == 0 && loc[1] == len(s) {
		arg := ""
		if loc[4] >= 0 {
			arg = s[loc[4]:loc[5]]
		}
		if v, ok := r.one(s, s[loc[2]:loc[3]], arg, path); ok {
			return v
		}
		return s
	}
	return r.text(s, path)
}

// value resolves placeholders in every string of v, recursively.
func (r *resolver) value(v any, path string) any {
	switch t := v.(type) {
	case string:
		return r.str(t, path)
	case map[string]any:
		keys := slices.Sorted(maps.Keys(t))
		out := make(map[string]any, len(t))
		for _, k := range keys {
			out[k] = r.value(t[k], path+"/"+escapePointer(k))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = r.value(e, path+"/"+strconv.Itoa(i))
		}
		return out
	}
	return v
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func stringify(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case int:
		return strconv.Itoa(t)
	}
	b, err := marshalCompact(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// decodeJSON decodes one JSON value keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// marshalCompact encodes v without HTML escaping and without a newline.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// frame is an open object or array while rawJSON re-emits a document.
type frame struct {
	obj       bool
	expectKey bool
	n         int
	key       string
	path      string
}

// rawJSON resolves placeholders in the string values of a JSON document and
// re-emits it compactly with its keys in their original order and its
// numbers as written. A document without placeholders is returned as given.
func (r *resolver) rawJSON(raw []byte, base string) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("not valid JSON")
	}
	if !placeholderRE().Match(raw) {
		return bytes.TrimSpace(raw), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var buf bytes.Buffer
	var stack []*frame
	top := func() *frame {
		if len(stack) == 0 {
			return nil
		}
		return stack[len(stack)-1]
	}
	done := func(f *frame) {
		if f != nil {
			f.n++
			f.expectKey = f.obj
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		f := top()
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			buf.WriteByte(byte(d))
			stack = stack[:len(stack)-1]
			done(top())
			continue
		}
		if f != nil && f.obj && f.expectKey {
			key, _ := tok.(string)
			if f.n > 0 {
				buf.WriteByte(',')
			}
			kb, err := marshalCompact(key)
			if err != nil {
				return nil, err
			}
			buf.Write(kb)
			buf.WriteByte(':')
			f.key, f.expectKey = key, false
			continue
		}
		path := base
		if f != nil {
			if f.obj {
				path = f.path + "/" + escapePointer(f.key)
			} else {
				if f.n > 0 {
					buf.WriteByte(',')
				}
				path = f.path + "/" + strconv.Itoa(f.n)
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			buf.WriteByte(byte(t))
			stack = append(stack, &frame{obj: t == '{', expectKey: t == '{', path: path})
			continue
		case string:
			b, err := marshalCompact(r.str(t, path))
			if err != nil {
				return nil, err
			}
			buf.Write(b)
		default:
			b, err := marshalCompact(t)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
		}
		done(f)
	}
	return buf.Bytes(), nil
}
