package coder

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// generateGo renders the model as a Go file of package pkg: one type per
// schema (structs with json tags; enums as named strings with constants),
// then per endpoint its Method/Path/Status constants and, when the path has
// parameters, a Params struct whose Path method fills them in.
func generateGo(m *model, pkg string) ([]byte, error) {
	var b strings.Builder
	header(&b, m, "//")
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	for _, r := range m.routes {
		if len(r.params) > 0 {
			b.WriteString("import \"net/url\"\n\n")
			break
		}
	}
	for _, t := range m.types {
		goDoc(&b, t.name, t.doc, "")
		switch t.kind {
		case "object":
			fmt.Fprintf(&b, "type %s struct {\n", t.name)
			fields := map[string]bool{}
			for _, f := range t.props {
				name := unique(fields, pascal(f.json, true))
				goDoc(&b, "", f.doc, "\t")
				typ := goType(f.typ)
				tag := f.json
				if !f.required {
					tag += ",omitempty"
					if f.typ.kind == "named" && !strings.HasPrefix(typ, "*") && m.isStruct(f.typ.name) {
						// omitempty never omits a struct value; a pointer can be absent.
						typ = "*" + typ
					}
				}
				fmt.Fprintf(&b, "\t%s %s `json:%s`\n", name, typ, strconv.Quote(tag))
			}
			b.WriteString("}\n\n")
		case "enum":
			base := map[string]string{"string": "string", "integer": "int64", "number": "float64", "boolean": "bool"}[t.enumBase]
			if base == "" {
				fmt.Fprintf(&b, "type %s = any\n\n", t.name)
				break
			}
			fmt.Fprintf(&b, "type %s %s\n\n", t.name, base)
			if t.enumBase != "string" {
				break
			}
			fmt.Fprintf(&b, "// Values of %s.\nconst (\n", t.name)
			used := map[string]bool{}
			for _, v := range t.enum {
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return nil, fmt.Errorf("enum %s: value %s is not a string: %w", t.name, v, err)
				}
				c := unique(used, t.name+pascal(s, true))
				fmt.Fprintf(&b, "\t%s %s = %s\n", c, t.name, strconv.Quote(s))
			}
			b.WriteString(")\n\n")
		case "allOf":
			fmt.Fprintf(&b, "type %s struct {\n", t.name)
			for _, p := range t.parts {
				fmt.Fprintf(&b, "\t%s\n", p.name)
			}
			b.WriteString("}\n\n")
		default:
			typ := goType(t.alias)
			if t.alias.kind == "named" {
				fmt.Fprintf(&b, "type %s = %s\n\n", t.name, typ)
			} else {
				fmt.Fprintf(&b, "type %s %s\n\n", t.name, typ)
			}
		}
	}
	for _, r := range m.routes {
		n := pascal(r.id, true)
		fmt.Fprintf(&b, "// %s is %s %s, answered with %d.\nconst (\n", n, r.method, r.path, r.status)
		fmt.Fprintf(&b, "\t%sMethod = %s\n\t%sPath = %s\n\t%sStatus = %d\n)\n\n", n, strconv.Quote(r.method), n, strconv.Quote(r.path), n, r.status)
		if len(r.params) == 0 {
			continue
		}
		fmt.Fprintf(&b, "// %sParams are the path parameters of %sPath.\ntype %sParams struct {\n", n, n, n)
		for _, p := range r.params {
			fmt.Fprintf(&b, "\t%s string\n", pascal(p, true))
		}
		b.WriteString("}\n\n")
		fmt.Fprintf(&b, "// Path returns %sPath with the parameters filled in, path-escaped.\nfunc (p %sParams) Path() string {\n\treturn ", n, n)
		for i, s := range r.segments {
			if i > 0 {
				b.WriteString(" + ")
			}
			if s.param {
				fmt.Fprintf(&b, "url.PathEscape(p.%s)", pascal(s.text, true))
			} else {
				b.WriteString(strconv.Quote(s.text))
			}
		}
		b.WriteString("\n}\n\n")
	}
	out, err := format.Source([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("generated Go does not parse (a contract_bridge bug): %w", err)
	}
	if err := uniqueGoDecls(out); err != nil {
		return nil, err
	}
	return out, nil
}

// uniqueGoDecls refuses output that declares a top-level name twice.
func uniqueGoDecls(src []byte) error {
	f, err := parser.ParseFile(token.NewFileSet(), "contract_gen.go", src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return uniqueDecls(names)
}

// isStruct reports whether the named type is rendered as a Go struct.
func (m *model) isStruct(name string) bool {
	for _, t := range m.types {
		if t.name == name {
			return t.kind == "object" || t.kind == "allOf"
		}
	}
	return false
}

func goDoc(b *strings.Builder, name, doc, indent string) {
	doc = strings.TrimSpace(doc)
	if doc == "" {
		return
	}
	lines := strings.Split(doc, "\n")
	if name != "" {
		lines[0] = name + ": " + lines[0]
	}
	for _, l := range lines {
		fmt.Fprintf(b, "%s// %s\n", indent, strings.TrimRight(l, " \t"))
	}
}

// goType renders a type expression; nullable values become pointers (slices
// and maps are nil-able already).
func goType(t texpr) string {
	s := ""
	switch t.kind {
	case "string":
		s = "string"
	case "integer":
		s = "int64"
	case "number":
		s = "float64"
	case "boolean":
		s = "bool"
	case "array":
		return "[]" + goType(*t.elem)
	case "map":
		return "map[string]" + goType(*t.elem)
	case "named":
		s = t.name
	case "literal":
		switch {
		case strings.HasPrefix(string(t.literal), `"`):
			s = "string"
		case string(t.literal) == "true" || string(t.literal) == "false":
			s = "bool"
		case strings.ContainsAny(string(t.literal), "[{n"):
			return "any"
		default:
			s = "float64"
		}
	default:
		// any, null and unions: Go has no sum types; the value decodes as is.
		return "any"
	}
	if t.nullable {
		return "*" + s
	}
	return s
}
