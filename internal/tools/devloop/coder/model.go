package coder

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// texpr is a type expression: what a property, an item or an alias is.
type texpr struct {
	kind     string // any, string, integer, number, boolean, null, array, map, named, union, literal
	nullable bool
	elem     *texpr  // array item, map value
	name     string  // named: the generated type's name
	variants []texpr // union
	literal  json.RawMessage
}

// field is a property of a generated object type.
type field struct {
	json     string
	doc      string
	typ      texpr
	required bool
}

// named is a generated top-level type.
type named struct {
	name  string
	doc   string
	kind  string // object, enum, alias, allOf
	props []field
	// enum: the values as JSON literals and their common JSON type
	// ("string", "number", "boolean" or "" when mixed).
	enum     []json.RawMessage
	enumBase string
	alias    texpr
	parts    []texpr // allOf: the member types, each named
}

// route is one endpoint's route constants.
type route struct {
	id       string
	method   string
	path     string
	status   int
	params   []string // path parameter names, in order
	segments []segment
	request  string // type name, "" when the endpoint has no request
	response string
}

// segment is a literal piece of a path or a parameter.
type segment struct {
	text  string
	param bool
}

// model is everything a generator needs, in output order.
type model struct {
	contract *contract.Contract
	path     string // contracts/<name>.json
	sha256   string
	types    []*named
	routes   []route
}

type builder struct {
	taken map[string]bool
	types []*named
	defs  map[string]*schema // "#/definitions/X" → schema
	names map[string]string  // "#/definitions/X" → generated name
	// goStyle names types the Go way (ID, URL …) so each language gets
	// idiomatic names.
	goStyle bool
}

// buildModel turns a contract into the generator's model; sum is the
// contract file's hash. The error names the place in the contract that
// cannot be generated and why.
func buildModel(c *contract.Contract, sum, path string, goStyle bool) (*model, error) {
	b := &builder{taken: map[string]bool{}, defs: map[string]*schema{}, names: map[string]string{}, goStyle: goStyle}
	if !goStyle {
		// Names the TypeScript output itself uses: a definition called
		// Record would shadow the built-in the maps are written with.
		for _, n := range []string{"Record", "RouteId"} {
			b.claim(n)
		}
	}
	// Names of shared definitions first, in a fixed order, so they keep
	// their own names whatever the endpoints are called.
	refs := c.SchemaRefs()
	for _, ref := range refs {
		var s schema
		if err := json.Unmarshal(c.Schemas[ref], &s); err != nil {
			return nil, fmt.Errorf("%s: not a JSON Schema: %v", ref, err)
		}
		b.defs[ref] = &s
		b.names[ref] = b.claim(pascal(unescapePointer(ref[strings.LastIndex(ref, "/")+1:]), goStyle))
	}
	for _, ref := range refs {
		if err := b.define(b.names[ref], b.defs[ref], ref); err != nil {
			return nil, err
		}
	}
	m := &model{contract: c, path: path, sha256: sum}
	seen := map[string]int{}
	for i, e := range c.Endpoints {
		if j, dup := seen[constant(e.ID)]; dup {
			return nil, fmt.Errorf("endpoints[%d] id %q and endpoints[%d] id %q name the same route constants; give every endpoint a distinct id", j, c.Endpoints[j].ID, i, e.ID)
		}
		seen[constant(e.ID)] = i
	}
	for i, e := range c.Endpoints {
		r := route{id: e.ID, method: strings.ToUpper(e.Method), path: e.Path, status: e.Status}
		r.segments, r.params = splitPath(e.Path)
		where := fmt.Sprintf("endpoints[%d] (%s)", i, e.ID)
		for _, part := range []struct {
			raw    json.RawMessage
			suffix string
			dst    *string
		}{{e.Request, "Request", &r.request}, {e.Response, "Response", &r.response}} {
			if len(part.raw) == 0 || string(part.raw) == "null" {
				continue
			}
			var s schema
			if err := json.Unmarshal(part.raw, &s); err != nil {
				return nil, fmt.Errorf("%s.%s: not a JSON Schema: %v", where, strings.ToLower(part.suffix), err)
			}
			*part.dst = b.claim(pascal(e.ID, goStyle) + part.suffix)
			if err := b.define(*part.dst, &s, where+"."+strings.ToLower(part.suffix)); err != nil {
				return nil, err
			}
		}
		m.routes = append(m.routes, r)
	}
	m.types = b.types
	return m, nil
}

func unescapePointer(s string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// claim reserves a top-level name, suffixing 2, 3 … on a clash.
func (b *builder) claim(name string) string { return unique(b.taken, name) }

// unique marks and returns the first of name, name2, name3 … not in taken.
func unique(taken map[string]bool, name string) string {
	n := name
	for i := 2; taken[n]; i++ {
		n = fmt.Sprintf("%s%d", name, i)
	}
	taken[n] = true
	return n
}

// define generates the named type name for s.
func (b *builder) define(name string, s *schema, where string) error {
	if s == nil {
		s = &schema{}
	}
	nt := &named{name: name, doc: s.Description}
	b.types = append(b.types, nt)
	switch {
	case len(s.AllOf) > 0 && s.Ref == "":
		nt.kind = "allOf"
		for i, part := range s.AllOf {
			t, err := b.expr(part, fmt.Sprintf("%sPart%d", name, i+1), fmt.Sprintf("%s.allOf[%d]", where, i))
			if err != nil {
				return err
			}
			if t.kind != "named" {
				return fmt.Errorf("%s.allOf[%d]: only objects and $refs can be combined with allOf", where, i)
			}
			nt.parts = append(nt.parts, t)
		}
		if len(s.Properties) > 0 {
			rest := *s
			rest.AllOf = nil
			t, err := b.expr(&rest, name+"Own", where)
			if err != nil {
				return err
			}
			nt.parts = append(nt.parts, t)
		}
		return nil
	case isObject(s) && s.Ref == "" && len(s.Properties) > 0:
		nt.kind = "object"
		return b.fill(nt, s, where)
	case len(s.Enum) > 0 && s.Ref == "":
		nt.kind = "enum"
		nt.enum, nt.enumBase = s.Enum, enumBase(s.Enum, s.Type)
		return nil
	}
	t, err := b.expr(s, name, where)
	if err != nil {
		return err
	}
	nt.kind, nt.alias = "alias", t
	return nil
}

// fill adds the properties of s, sorted by name, to an object type.
func (b *builder) fill(nt *named, s *schema, where string) error {
	keys := slices.Sorted(maps.Keys(s.Properties))
	for _, k := range keys {
		p := s.Properties[k]
		t, err := b.expr(p, nt.name+pascal(k, b.goStyle), where+".properties."+k)
		if err != nil {
			return err
		}
		doc := ""
		if p != nil {
			doc = p.Description
		}
		nt.props = append(nt.props, field{json: k, doc: doc, typ: t, required: slices.Contains(s.Required, k)})
	}
	return nil
}

func isObject(s *schema) bool {
	return slices.Contains(s.Type, "object") || (len(s.Type) == 0 && s.Properties != nil)
}

// expr is the type expression of s; inline objects with properties and
// enums become named types called hint.
func (b *builder) expr(s *schema, hint, where string) (texpr, error) {
	if s == nil {
		return texpr{kind: "any"}, nil
	}
	if s.Ref != "" {
		name, ok := b.names[s.Ref]
		if !ok {
			return texpr{}, b.badRef(s.Ref, where)
		}
		return texpr{kind: "named", name: name, nullable: s.Nullable}, nil
	}
	nullable := s.Nullable || slices.Contains(s.Type, "null")
	types := slices.DeleteFunc(slices.Clone(s.Type), func(t string) bool { return t == "null" })
	switch {
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0:
		alts := append(slices.Clone(s.OneOf), s.AnyOf...)
		var vs []texpr
		for i, a := range alts {
			if a != nil && len(a.Type) == 1 && a.Type[0] == "null" && a.Ref == "" {
				nullable = true
				continue
			}
			t, err := b.expr(a, fmt.Sprintf("%sOption%d", hint, i+1), fmt.Sprintf("%s.oneOf[%d]", where, i))
			if err != nil {
				return texpr{}, err
			}
			vs = append(vs, t)
		}
		if len(vs) == 1 {
			vs[0].nullable = vs[0].nullable || nullable
			return vs[0], nil
		}
		return texpr{kind: "union", variants: vs, nullable: nullable}, nil
	case len(s.AllOf) > 0 || (isObject(s) && len(s.Properties) > 0):
		name := b.claim(hint)
		if err := b.define(name, s, where); err != nil {
			return texpr{}, err
		}
		return texpr{kind: "named", name: name, nullable: nullable}, nil
	case len(s.Enum) > 0:
		vals := slices.DeleteFunc(slices.Clone(s.Enum), func(v json.RawMessage) bool { return string(v) == "null" })
		if len(vals) < len(s.Enum) {
			nullable = true
		}
		name := b.claim(hint)
		b.types = append(b.types, &named{name: name, doc: s.Description, kind: "enum", enum: vals, enumBase: enumBase(vals, s.Type)})
		return texpr{kind: "named", name: name, nullable: nullable}, nil
	case len(s.Const) > 0:
		return texpr{kind: "literal", literal: s.Const, nullable: nullable}, nil
	case len(types) > 1:
		var vs []texpr
		for _, t := range types {
			one := *s
			one.Type, one.Nullable = typeList{t}, false
			v, err := b.expr(&one, hint+pascal(t, b.goStyle), where)
			if err != nil {
				return texpr{}, err
			}
			vs = append(vs, v)
		}
		return texpr{kind: "union", variants: vs, nullable: nullable}, nil
	}
	t := ""
	if len(types) == 1 {
		t = types[0]
	}
	switch t {
	case "string", "integer", "number", "boolean":
		return texpr{kind: t, nullable: nullable}, nil
	case "null":
		return texpr{kind: "null"}, nil
	case "array":
		item, err := b.expr(s.Items, hint+"Item", where+".items")
		if err != nil {
			return texpr{}, err
		}
		return texpr{kind: "array", elem: &item, nullable: nullable}, nil
	case "object":
		if s.AdditionalProperties != nil {
			v, err := b.expr(s.AdditionalProperties, hint+"Value", where+".additionalProperties")
			if err != nil {
				return texpr{}, err
			}
			return texpr{kind: "map", elem: &v, nullable: nullable}, nil
		}
		return texpr{kind: "map", elem: &texpr{kind: "any"}, nullable: nullable}, nil
	case "":
		if nullable && len(types) == 0 && len(s.Type) > 0 {
			return texpr{kind: "null"}, nil
		}
		return texpr{kind: "any", nullable: nullable}, nil
	}
	return texpr{}, fmt.Errorf("%s: unknown type %q (use string, integer, number, boolean, array, object or null)", where, t)
}

func (b *builder) badRef(ref, where string) error {
	if !strings.HasPrefix(ref, "#/") {
		return fmt.Errorf("%s: $ref %q points outside the contract; only refs within it are supported (#/definitions/X, #/$defs/X, #/components/schemas/X)", where, ref)
	}
	known := slices.Sorted(maps.Keys(b.names))
	if len(known) == 0 {
		return fmt.Errorf("%s: $ref %q not found: the contract has no definitions, $defs or components.schemas", where, ref)
	}
	return fmt.Errorf("%s: $ref %q not found in the contract (defined: %s)", where, ref, strings.Join(known, ", "))
}

// enumBase is the common JSON type of the values ("" when mixed); numbers
// are "integer" when the schema says so.
func enumBase(vals []json.RawMessage, declared typeList) string {
	base := ""
	for i, v := range vals {
		t := "number"
		switch {
		case len(v) > 0 && v[0] == '"':
			t = "string"
		case string(v) == "true" || string(v) == "false":
			t = "boolean"
		}
		if t == "number" && slices.Contains(declared, "integer") {
			t = "integer"
		}
		if i == 0 {
			base = t
		} else if base != t {
			base = ""
		}
	}
	return base
}

var pathParam = lazyre.New(`:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// splitPath cuts a route path into literal text and parameters; both the
// Express form /todos/:id and the OpenAPI form /todos/{id} are parameters.
func splitPath(p string) ([]segment, []string) {
	var segs []segment
	var params []string
	last := 0
	for _, m := range pathParam().FindAllStringSubmatchIndex(p, -1) {
		if m[0] > last {
			segs = append(segs, segment{text: p[last:m[0]]})
		}
		name := ""
		if m[2] >= 0 {
			name = p[m[2]:m[3]]
		} else {
			name = p[m[4]:m[5]]
		}
		segs = append(segs, segment{text: name, param: true})
		if !slices.Contains(params, name) {
			params = append(params, name)
		}
		last = m[1]
	}
	if last < len(p) {
		segs = append(segs, segment{text: p[last:]})
	}
	return segs, params
}
