package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/toolhost/toolhost/internal/tool"
)

// violation turns a schema validation failure into one message naming each
// JSON path and the rule it broke, in words the model can act on. The parts
// are sorted, so the same arguments always get the same message.
func violation(ve *jsonschema.ValidationError) *tool.ValidationError {
	type part struct{ field, text string }
	var parts []part
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		field, text, descend := describe(e)
		if text != "" {
			for _, f := range strings.Split(field, "\x00") {
				parts = append(parts, part{f, f + ": " + text})
			}
		}
		if descend {
			for _, c := range e.Causes {
				walk(c)
			}
		}
	}
	walk(ve)
	sort.Slice(parts, func(i, j int) bool { return parts[i].text < parts[j].text })
	texts := make([]string, 0, len(parts))
	for i, p := range parts {
		if i == 0 || p.text != parts[i-1].text {
			texts = append(texts, p.text)
		}
	}
	first := "(root)"
	if len(parts) > 0 {
		first = parts[0].field
	}
	return &tool.ValidationError{Field: first, Reason: strings.Join(texts, "; ")}
}

// describe returns the path(s) an error is about (NUL-separated when it
// names several), what is wrong there, and whether its causes say more.
func describe(e *jsonschema.ValidationError) (field, text string, descend bool) {
	at := jsonPath(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Group, *kind.Schema, *kind.Reference, *kind.AllOf:
		return at, "", true
	case *kind.AnyOf:
		return at, fmt.Sprintf("matches none of the %d allowed forms (anyOf)", len(e.Causes)), false
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			return at, fmt.Sprintf("matches %d of the allowed forms, must match exactly one (oneOf)", len(k.Subschemas)), false
		}
		return at, fmt.Sprintf("matches none of the %d allowed forms (oneOf)", len(e.Causes)), false
	case *kind.Not:
		return at, "matches a form that is not allowed (not)", false
	case *kind.FalseSchema:
		return at, "is not allowed here", false
	case *kind.Required:
		fields := make([]string, len(k.Missing))
		for i, m := range k.Missing {
			fields[i] = jsonPath(append(append([]string(nil), e.InstanceLocation...), m))
		}
		return strings.Join(fields, "\x00"), "is required", false
	case *kind.AdditionalProperties:
		fields := make([]string, len(k.Properties))
		for i, p := range k.Properties {
			fields[i] = jsonPath(append(append([]string(nil), e.InstanceLocation...), p))
		}
		return strings.Join(fields, "\x00"), "is not a known property; remove it or check its spelling", false
	case *kind.Type:
		return at, fmt.Sprintf("must be %s, not %s", strings.Join(k.Want, " or "), k.Got), false
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = literal(w)
		}
		if len(want) == 1 {
			return at, "must be " + want[0], false
		}
		return at, "must be one of " + strings.Join(want, ", "), false
	case *kind.Const:
		return at, "must be " + literal(k.Want), false
	case *kind.Pattern:
		return at, "does not match pattern " + k.Want, false
	case *kind.MinLength:
		return at, fmt.Sprintf("must be at least %d characters long (is %d)", k.Want, k.Got), false
	case *kind.MaxLength:
		return at, fmt.Sprintf("must be at most %d characters long (is %d)", k.Want, k.Got), false
	case *kind.MinItems:
		return at, fmt.Sprintf("must have at least %d items (has %d)", k.Want, k.Got), false
	case *kind.MaxItems:
		return at, fmt.Sprintf("must have at most %d items (has %d)", k.Want, k.Got), false
	case *kind.MinProperties:
		return at, fmt.Sprintf("must have at least %d properties (has %d)", k.Want, k.Got), false
	case *kind.MaxProperties:
		return at, fmt.Sprintf("must have at most %d properties (has %d)", k.Want, k.Got), false
	case *kind.UniqueItems:
		return at, fmt.Sprintf("must not repeat items: [%d] and [%d] are equal", k.Duplicates[0], k.Duplicates[1]), false
	case *kind.Minimum:
		return at, fmt.Sprintf("must be ≥ %s (is %s)", number(k.Want), number(k.Got)), false
	case *kind.Maximum:
		return at, fmt.Sprintf("must be ≤ %s (is %s)", number(k.Want), number(k.Got)), false
	case *kind.ExclusiveMinimum:
		return at, fmt.Sprintf("must be > %s (is %s)", number(k.Want), number(k.Got)), false
	case *kind.ExclusiveMaximum:
		return at, fmt.Sprintf("must be < %s (is %s)", number(k.Want), number(k.Got)), false
	case *kind.MultipleOf:
		return at, fmt.Sprintf("must be a multiple of %s (is %s)", number(k.Want), number(k.Got)), false
	case *kind.DependentRequired:
		return at, fmt.Sprintf("needs %s when %s is given", strings.Join(k.Missing, ", "), k.Prop), false
	case *kind.PropertyNames:
		return jsonPath(append(append([]string(nil), e.InstanceLocation...), k.Property)), "is not an allowed property name", false
	case *kind.Contains:
		return at, "has no item of the required form (contains)", false
	case *kind.MinContains:
		return at, fmt.Sprintf("must have at least %d items of the required form (has %d)", k.Want, len(k.Got)), false
	case *kind.MaxContains:
		return at, fmt.Sprintf("must have at most %d items of the required form (has %d)", k.Want, len(k.Got)), false
	}
	// Kinds a tool schema rarely uses (unevaluated items, formats asserted
	// by a vocabulary): the library's own English text.
	msg := e.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && !strings.Contains(msg, "\n") {
		msg = msg[i+2:]
	}
	return at, msg, len(e.Causes) > 0
}

// jsonPath renders an instance location ["items","2","id"] as
// "items[2].id"; the empty location is "(root)".
func jsonPath(loc []string) string {
	if len(loc) == 0 {
		return "(root)"
	}
	var b strings.Builder
	for i, p := range loc {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// literal renders a schema value as JSON ("a", 3, true); objects and
// arrays too, since the model may have to type them.
func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func number(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
