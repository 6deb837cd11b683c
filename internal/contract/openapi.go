package contract

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// openAPIMethods are the operations of a path item, as OpenAPI names them.
var openAPIMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// parseOpenAPI reads an OpenAPI 3.0 or 3.1 document: routes from paths
// (operationId as the id) under the servers' base path, path items through
// their $refs (3.1 components.pathItems), the JSON request body and the
// first 2xx response of each operation ($refs to components.requestBodies
// and components.responses followed), types from components.schemas. b,
// when set, brought in the other files the document refers to and knows
// which file each path item came from.
func parseOpenAPI(doc *yaml.Node, name, rel string, b *bundler) (*Contract, error) {
	v := strings.TrimSpace(get(doc, "openapi").Value)
	c := &Contract{Name: name, Schemas: map[string]json.RawMessage{}}
	switch {
	case strings.HasPrefix(v, "3.0"):
		c.Format = FormatOpenAPI30
	case strings.HasPrefix(v, "3.1"):
		c.Format = FormatOpenAPI31
	default:
		return nil, fmt.Errorf("openapi %q: only OpenAPI 3.0 and 3.1 documents are read", v)
	}
	if info := get(doc, "info"); info != nil {
		if ver := get(info, "version"); ver != nil {
			c.Version = ver.Value
		}
	}
	comps := get(doc, "components")
	if schemas := get(comps, "schemas"); schemas != nil {
		for i := 0; i+1 < len(schemas.Content); i += 2 {
			js, err := toJSON(schemas.Content[i+1])
			if err != nil {
				return nil, fmt.Errorf("components.schemas.%s: %v", schemas.Content[i].Value, err)
			}
			c.Schemas["#/components/schemas/"+EscapePointer(schemas.Content[i].Value)] = js
		}
	}
	paths := get(doc, "paths")
	if paths != nil && paths.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: paths must be an object of path → operations", paths.Line)
	}
	base, err := serverBase(get(doc, "servers"), "servers")
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for i := 0; paths != nil && i+1 < len(paths.Content); i += 2 {
		p, item := paths.Content[i].Value, paths.Content[i+1]
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("line %d: path %q must start with /", paths.Content[i].Line, p)
		}
		// A path item may be a $ref (3.1: to components.pathItems); one
		// that cannot be followed is an error, never a route dropped.
		item, err := follow(doc, item, "paths."+p)
		if err != nil {
			return nil, err
		}
		file := rel
		if b != nil && b.origin[item] != "" {
			file = b.origin[item]
		}
		if item.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: paths.%s must be a path item (an object of operations) or a $ref to one", item.Line, p)
		}
		pathBase := base
		if s := get(item, "servers"); s != nil {
			if pathBase, err = serverBase(s, "paths."+p+".servers"); err != nil {
				return nil, err
			}
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			m := strings.ToLower(item.Content[j].Value)
			if !openAPIMethods[m] {
				continue // parameters, summary, servers …
			}
			op := item.Content[j+1]
			opBase := pathBase
			if s := get(op, "servers"); s != nil {
				if opBase, err = serverBase(s, "paths."+p+"."+m+".servers"); err != nil {
					return nil, err
				}
			}
			e := Endpoint{Method: strings.ToUpper(m), Path: joinBase(opBase, p), Line: item.Content[j].Line, File: file}
			if id := get(op, "operationId"); id != nil && id.Value != "" {
				e.ID = id.Value
			} else {
				e.ID = operationID(m, p)
			}
			if ids[e.ID] {
				return nil, fmt.Errorf("line %d: operationId %q is used twice; give every operation its own", e.Line, e.ID)
			}
			ids[e.ID] = true
			where := fmt.Sprintf("paths.%s.%s", p, m)
			body, err := follow(doc, get(op, "requestBody"), where+".requestBody")
			if err != nil {
				return nil, err
			}
			if e.Request, err = jsonSchemaOf(body, where+".requestBody"); err != nil {
				return nil, err
			}
			code, resp := pickResponse(get(op, "responses"))
			e.Status = code
			if resp, err = follow(doc, resp, where+".responses"); err != nil {
				return nil, err
			}
			if e.Response, err = jsonSchemaOf(resp, where+".responses"); err != nil {
				return nil, err
			}
			c.Endpoints = append(c.Endpoints, e)
		}
	}
	return c, nil
}

// serverBase is the base path the first of servers serves the paths under:
// the path of its url (absolute, https://api.example.com/api/v1, or
// relative, /api/v2), its {variables} replaced by their defaults; "" for
// none or the root. The first server is the one a client uses by default;
// servers with other base paths are not read.
func serverBase(servers *yaml.Node, where string) (string, error) {
	if servers == nil || servers.Kind != yaml.SequenceNode || len(servers.Content) == 0 {
		return "", nil
	}
	first := servers.Content[0]
	u := get(first, "url")
	if u == nil || u.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: %s[0] has no url", first.Line, where)
	}
	raw := u.Value
	vars := get(first, "variables")
	for strings.Contains(raw, "{") {
		open := strings.Index(raw, "{")
		end := strings.Index(raw[open:], "}")
		if end < 0 {
			return "", fmt.Errorf("line %d: %s[0].url %q has an unclosed {", u.Line, where, u.Value)
		}
		name := raw[open+1 : open+end]
		def := get(get(vars, name), "default")
		if def == nil {
			return "", fmt.Errorf("line %d: %s[0].url %q uses {%s}, which its variables do not define with a default", u.Line, where, u.Value, name)
		}
		raw = raw[:open] + def.Value + raw[open+end+1:]
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		slash := strings.Index(rest, "/")
		if slash < 0 {
			return "", nil
		}
		raw = rest[slash:]
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	raw = strings.TrimRight(raw, "/")
	if raw != "" && !strings.HasPrefix(raw, "/") {
		// A relative url without a leading slash ("v2") is relative to
		// where the document is served; its path is still the base.
		raw = "/" + raw
	}
	return raw, nil
}

// joinBase puts a path under a server's base path.
func joinBase(base, p string) string {
	if base == "" {
		return p
	}
	return base + p
}

// operationID makes an id for an operation without operationId: the method
// and the path's literal segments, e.g. get-todos-id.
func operationID(method, p string) string {
	parts := []string{method}
	for _, seg := range strings.Split(p, "/") {
		seg = strings.Trim(seg, "{}:")
		if seg != "" {
			parts = append(parts, seg)
		}
	}
	return strings.Join(parts, "-")
}

// follow resolves a $ref within the document (to components.pathItems,
// .requestBodies, .responses …).
func follow(doc, n *yaml.Node, where string) (*yaml.Node, error) {
	for range 10 {
		ref := get(n, "$ref")
		if ref == nil {
			return n, nil
		}
		target, ok := strings.CutPrefix(ref.Value, "#/")
		if !ok {
			return nil, fmt.Errorf("%s: $ref %q points outside the document; only refs within it are read", where, ref.Value)
		}
		cur := doc
		for _, seg := range strings.Split(target, "/") {
			cur = get(cur, strings.NewReplacer("~1", "/", "~0", "~").Replace(seg))
		}
		if cur == nil {
			return nil, fmt.Errorf("%s: $ref %q not found in the document", where, ref.Value)
		}
		n = cur
	}
	return nil, fmt.Errorf("%s: $refs refer to each other in a loop", where)
}

// pickResponse returns the operation's success response: the lowest 2xx
// code (2XX counts as 200), else default; status 0 when there is none.
func pickResponse(responses *yaml.Node) (int, *yaml.Node) {
	if responses == nil || responses.Kind != yaml.MappingNode {
		return 0, nil
	}
	type cand struct {
		code int
		n    *yaml.Node
	}
	var cs []cand
	var def *yaml.Node
	for i := 0; i+1 < len(responses.Content); i += 2 {
		k := strings.ToUpper(responses.Content[i].Value)
		switch {
		case k == "DEFAULT":
			def = responses.Content[i+1]
		case k == "2XX":
			cs = append(cs, cand{200, responses.Content[i+1]})
		case len(k) == 3 && k[0] == '2':
			if n, err := strconv.Atoi(k); err == nil {
				cs = append(cs, cand{n, responses.Content[i+1]})
			}
		}
	}
	if len(cs) == 0 {
		if def != nil {
			return 200, def
		}
		return 0, nil
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].code < cs[j].code })
	return cs[0].code, cs[0].n
}

// jsonSchemaOf returns the schema of a request body or response's JSON
// content (application/json, else any +json type, else the first), or nil
// when it has no content.
func jsonSchemaOf(n *yaml.Node, where string) (json.RawMessage, error) {
	content := get(n, "content")
	if content == nil || content.Kind != yaml.MappingNode || len(content.Content) == 0 {
		return nil, nil
	}
	pick := content.Content[1]
	for i := 0; i+1 < len(content.Content); i += 2 {
		mt := strings.ToLower(content.Content[i].Value)
		if mt == "application/json" {
			pick = content.Content[i+1]
			break
		}
		if strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "/json") {
			pick = content.Content[i+1]
		}
	}
	s := get(pick, "schema")
	if s == nil {
		return nil, nil
	}
	js, err := toJSON(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	return js, nil
}
