//go:build !bench_no_rules

package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// kind is the CEL shape a JSON Schema position takes.
type kind int

const (
	kDyn kind = iota
	kString
	kInt
	kDouble
	kBool
	kList
	kMap
	kStruct
)

// shape is what CEL knows of a JSON value at one position of a tool's
// input schema: its type for the checker, and how a decoded value is
// converted for the evaluator (an "integer" becomes an int64, every other
// number a float64).
type shape struct {
	kind kind
	// elem is a list's items or a map's values.
	elem *shape
	// name and fields are a struct's (an object with declared properties
	// and additionalProperties false).
	name   string
	fields map[string]*fieldShape
	cel    *types.Type
}

type fieldShape struct {
	shape *shape
	ft    *types.FieldType
}

var dynShape = &shape{kind: kDyn, cel: types.DynType}

// maxSchemaDepth bounds how deep a schema is followed; below it values are
// dyn.
const maxSchemaDepth = 24

// shapes builds the shapes of JSON Schemas and registers their structs.
type shapes struct {
	structs map[string]*shape
}

// fromSchema is the shape of a JSON Schema document, whose structs are
// named below name. What CEL cannot express — unions, references,
// conditionals, tuples, objects open to other keys — is dyn (or a map).
func (b *shapes) fromSchema(name string, schema any, depth int) *shape {
	m, ok := schema.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return dynShape
	}
	for _, k := range []string{"$ref", "anyOf", "oneOf", "allOf", "not", "if"} {
		if _, ok := m[k]; ok {
			return dynShape
		}
	}
	t, _ := m["type"].(string)
	if t == "" {
		switch {
		case m["type"] != nil:
			return dynShape // a list of types
		case allStrings(m["enum"]):
			t = "string"
		case m["properties"] != nil:
			t = "object"
		default:
			if _, ok := m["const"].(string); ok {
				t = "string"
			}
		}
	}
	switch t {
	case "string":
		return &shape{kind: kString, cel: types.StringType}
	case "integer":
		return &shape{kind: kInt, cel: types.IntType}
	case "number":
		return &shape{kind: kDouble, cel: types.DoubleType}
	case "boolean":
		return &shape{kind: kBool, cel: types.BoolType}
	case "array":
		elem := dynShape
		if items, ok := m["items"].(map[string]any); ok {
			elem = b.fromSchema(name+"[]", items, depth+1)
		}
		return &shape{kind: kList, elem: elem, cel: types.NewListType(elem.cel)}
	case "object":
		props, _ := m["properties"].(map[string]any)
		switch ap := m["additionalProperties"].(type) {
		case bool:
			if !ap {
				return b.structOf(name, props, depth)
			}
		case map[string]any:
			if len(props) == 0 {
				elem := b.fromSchema(name+"{}", ap, depth+1)
				return &shape{kind: kMap, elem: elem, cel: types.NewMapType(types.StringType, elem.cel)}
			}
		}
		return &shape{kind: kMap, elem: dynShape, cel: types.NewMapType(types.StringType, types.DynType)}
	}
	return dynShape
}

func allStrings(v any) bool {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return false
	}
	for _, e := range l {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

// structOf registers the struct of an object schema with exactly the
// properties props. A property that is no CEL identifier (package, a
// name with a dash) is selected with backticks: args.`package`.
func (b *shapes) structOf(name string, props map[string]any, depth int) *shape {
	s := &shape{kind: kStruct, name: name, fields: map[string]*fieldShape{}, cel: types.NewObjectType(name)}
	b.structs[name] = s
	for p, ps := range props {
		fs := b.fromSchema(name+"."+p, ps, depth+1)
		s.fields[p] = &fieldShape{shape: fs, ft: fieldType(p, fs)}
	}
	return s
}

// fieldType reads a struct field from the map[string]any that holds the
// object. An absent field reads as its type's zero value ("", 0, false, an
// empty list or map, null for dyn), as a proto3 field does; has() tells
// whether it was given.
func fieldType(name string, s *shape) *types.FieldType {
	return &types.FieldType{
		Type: s.cel,
		IsSet: func(target any) bool {
			m, ok := target.(map[string]any)
			if !ok {
				return false
			}
			_, ok = m[name]
			return ok
		},
		GetFrom: func(target any) (any, error) {
			if u, ok := target.(*types.Unknown); ok {
				// A field of a command the parser cannot know.
				return u, nil
			}
			m, ok := target.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("field %s read from a %T", name, target)
			}
			if v, ok := m[name]; ok {
				return v, nil
			}
			return zero(s), nil
		},
	}
}

func zero(s *shape) any {
	switch s.kind {
	case kString:
		return ""
	case kInt:
		return int64(0)
	case kDouble:
		return float64(0)
	case kBool:
		return false
	case kList:
		return []any{}
	case kMap, kStruct:
		return map[string]any{}
	}
	return types.NullValue
}

// convert makes a decoded JSON document (numbers as json.Number) a value
// the evaluator reads, in place: a number at an "integer" position becomes
// an int64, every other number a float64.
func convert(v any, s *shape) any {
	switch x := v.(type) {
	case json.Number:
		if s.kind == kInt {
			if i, err := x.Int64(); err == nil {
				return i
			}
		}
		f, err := x.Float64()
		if err != nil {
			return types.NewErr("number %s out of range", string(x))
		}
		if s.kind == kInt && f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
			return int64(f)
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = convert(e, s.member(k))
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = convert(e, s.item())
		}
		return x
	}
	return v
}

func (s *shape) member(k string) *shape {
	switch s.kind {
	case kStruct:
		if f, ok := s.fields[k]; ok {
			return f.shape
		}
	case kMap:
		return s.elem
	}
	return dynShape
}

func (s *shape) item() *shape {
	if s.kind == kList {
		return s.elem
	}
	return dynShape
}

// provider is the CEL type provider of a rule set: the standard types,
// plus the structs of the tools' input schemas and of cmd.
type provider struct {
	*types.Registry
	structs map[string]*shape
}

func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if s, ok := p.structs[name]; ok {
		return types.NewTypeTypeWithParam(s.cel), true
	}
	return p.Registry.FindStructType(name)
}

func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if s, ok := p.structs[name]; ok {
		names := make([]string, 0, len(s.fields))
		for n := range s.fields {
			names = append(names, n)
		}
		slices.Sort(names)
		return names, true
	}
	return p.Registry.FindStructFieldNames(name)
}

func (p *provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if s, ok := p.structs[name]; ok {
		if f, ok := s.fields[field]; ok {
			return f.ft, true
		}
		return nil, false
	}
	return p.Registry.FindStructFieldType(name, field)
}

// NewValue refuses to build the tools' structs: a rule reads arguments,
// it does not make them.
func (p *provider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.structs[name]; ok {
		return types.NewErr("%s values cannot be constructed in a rule", name)
	}
	return p.Registry.NewValue(name, fields)
}

// typeName is the CEL struct name of a tool's arguments.
func typeName(toolName string) string {
	return "args." + strings.ReplaceAll(toolName, ".", "_")
}
