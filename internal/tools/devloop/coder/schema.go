package coder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// schema is the part of JSON Schema (draft 7 / 2020-12, and OpenAPI 3.0's
// nullable) the generator understands.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 typeList           `json:"type"`
	Nullable             bool               `json:"nullable"`
	Description          string             `json:"description"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	Items                *schema            `json:"-"`
	AdditionalProperties *schema            `json:"-"`
	Enum                 []json.RawMessage  `json:"enum"`
	Const                json.RawMessage    `json:"const"`
	OneOf                []*schema          `json:"oneOf"`
	AnyOf                []*schema          `json:"anyOf"`
	AllOf                []*schema          `json:"allOf"`
}

// UnmarshalJSON reads items and additionalProperties, which may be a schema
// or something else (a tuple array, a boolean) the generator treats as
// "anything".
func (s *schema) UnmarshalJSON(b []byte) error {
	type plain schema
	var aux struct {
		plain
		Items                json.RawMessage `json:"items"`
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*s = schema(aux.plain)
	var err error
	if s.Items, err = subschema(aux.Items); err != nil {
		return fmt.Errorf("items: %w", err)
	}
	if s.AdditionalProperties, err = subschema(aux.AdditionalProperties); err != nil {
		return fmt.Errorf("additionalProperties: %w", err)
	}
	return nil
}

// subschema decodes an optional schema-valued keyword: absent, false or a
// tuple array → nil; true → the empty schema (anything).
func subschema(raw json.RawMessage) (*schema, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "false" || string(raw) == "null" || raw[0] == '[':
		return nil, nil
	case string(raw) == "true":
		return &schema{}, nil
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// typeList is "type": a string or an array of strings.
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = typeList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type must be a string or an array of strings")
	}
	*t = many
	return nil
}

// words splits an identifier-ish string into words: on every character that
// is not a letter or digit, and where lower case turns to upper case.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = nil
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// initialisms are upper-cased whole in Go names, as golint would have them.
var initialisms = []string{"ID", "URL", "URI", "HTTP", "API", "JSON", "UUID", "IP", "SQL", "HTML", "CSS", "TTL", "UI", "XML"}

// pascal makes an exported Go/TS type name; goStyle upper-cases initialisms.
func pascal(s string, goStyle bool) string {
	var b strings.Builder
	for _, w := range words(s) {
		if goStyle && slices.Contains(initialisms, strings.ToUpper(w)) {
			b.WriteString(strings.ToUpper(w))
			continue
		}
		r := []rune(strings.ToLower(w))
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	name := b.String()
	if name == "" {
		return "X"
	}
	if unicode.IsDigit([]rune(name)[0]) {
		name = "X" + name
	}
	return name
}

// camel is pascal with a lower-case first word (TS function names).
func camel(s string) string {
	p := []rune(pascal(s, false))
	p[0] = unicode.ToLower(p[0])
	return string(p)
}

// constant is UPPER_SNAKE (TS route constants).
func constant(s string) string {
	ws := words(s)
	for i, w := range ws {
		ws[i] = strings.ToUpper(w)
	}
	out := strings.Join(ws, "_")
	if out == "" || unicode.IsDigit([]rune(out)[0]) {
		out = "X_" + out
	}
	return out
}
