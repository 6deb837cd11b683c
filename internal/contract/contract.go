package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// Formats a contract can be written in.
const (
	// FormatToolhost is toolhost's own small format, {name, version,
	// endpoints:[{id, method, path, request?, response, status}]}, the one
	// the architect writes when there is no OpenAPI document.
	FormatToolhost  = "toolhost"
	FormatOpenAPI30 = "openapi-3.0"
	FormatOpenAPI31 = "openapi-3.1"
)

// Endpoint is one route of a contract.
type Endpoint struct {
	ID     string
	Method string // upper case
	// Path is the route as served: the OpenAPI servers' base path (if
	// any) and the path as written, /todos/{id} or /todos/:id.
	Path string
	// Request and Response are JSON Schemas (nil when absent); $refs point
	// into Schemas.
	Request  json.RawMessage
	Response json.RawMessage
	Status   int
	// Line is the 1-based line of the endpoint in File.
	Line int
	// File is the project-relative file the endpoint is declared in: the
	// contract's, or a path-item file it refers to ("" when the contract
	// was parsed from bytes alone).
	File string
}

// Contract is a contract as every contract tool reads it, whatever format
// and syntax it was written in.
type Contract struct {
	Name    string
	Version string
	Format  string
	// Endpoints are in document order (OpenAPI: paths in order, methods in
	// the order written).
	Endpoints []Endpoint
	// Schemas are the shared definitions by their $ref:
	// "#/components/schemas/Todo", "#/definitions/Todo", "#/$defs/Todo".
	// Schemas of other files an OpenAPI contract refers to are among them,
	// under components.schemas.
	Schemas map[string]json.RawMessage
	// Files are the other files the contract refers to, project-relative
	// and sorted (empty for a contract in one file).
	Files []string
	// SHA256 is the canonical hash of the contract and every file it
	// refers to (see Hash).
	SHA256 string
}

var jsonNumber = lazyre.New(`^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$`)

// NamePattern is what a contract name may look like.
var NamePattern = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Dir holds the contracts, relative to the project dir.
const Dir = "contracts"

// HashesFile is the hash record in Dir, not a contract.
const HashesFile = "hashes.json"

// Exts are the file extensions a contract may have, in the order Locate
// tries them.
var Exts = []string{".json", ".yaml", ".yml"}

// Path returns the project-relative path of a named JSON contract.
func Path(name string) string { return Dir + "/" + name + ".json" }

// NameOf returns the contract name of a project-relative contract path
// (contracts/<name>.json|.yaml|.yml), or "" when rel is not one.
func NameOf(rel string) string {
	if path.Dir(rel) != Dir || path.Base(rel) == HashesFile {
		return ""
	}
	base := path.Base(rel)
	for _, ext := range Exts {
		if name, ok := strings.CutSuffix(base, ext); ok && NamePattern().MatchString(name) {
			return name
		}
	}
	return ""
}

// Locate finds the file of the named contract with read (a project-relative
// reader) and returns its path and content. None: an error matching
// fs.ErrNotExist; two files for one name: an error naming both.
func Locate(read func(rel string) ([]byte, error), name string) (string, []byte, error) {
	var found []string
	var data []byte
	for _, ext := range Exts {
		rel := Dir + "/" + name + ext
		b, err := read(rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return rel, nil, err
		}
		if found == nil {
			data = b
		}
		found = append(found, rel)
	}
	switch len(found) {
	case 0:
		return Path(name), nil, fmt.Errorf("no contract %s (%s/%s.json, .yaml or .yml): %w", name, Dir, name, fs.ErrNotExist)
	case 1:
		return found[0], data, nil
	}
	return found[0], nil, fault.Safef("contract %s is written twice (%s); keep one file per contract", name, strings.Join(found, " and "))
}

// isYAML tells YAML from JSON by the first significant byte.
func isYAML(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) == 0 || t[0] != '{'
}

// Parse reads a contract from the bytes of its file (JSON or YAML): the
// toolhost format or an OpenAPI 3.0/3.1 document. name is the contract's
// name from its file, used when the document names none. A document with
// neither a route nor a type is refused: it is not a contract of any
// format. A $ref to another file is refused: Load reads those.
func Parse(data []byte, name string) (*Contract, error) {
	return parse(data, name, "", nil)
}

// Load reads the contract at the project-relative path rel, whose bytes are
// data, with every file its $refs reach read through read (relative to the
// file that holds the ref, as OpenAPI resolves them). The contract's hash
// covers those files too, so changing one changes it.
func Load(read Reader, rel string, data []byte, name string) (*Contract, error) {
	return parse(data, name, rel, read)
}

func parse(data []byte, name, rel string, read Reader) (*Contract, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		what := "YAML"
		if !isYAML(data) {
			what = "JSON"
		}
		return nil, fmt.Errorf("contract is not valid %s: %v", what, err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("contract is not an object: expected {name, version, endpoints} or an OpenAPI 3 document")
	}
	doc := root.Content[0]
	var c *Contract
	var err error
	sources := []source{{rel, data}}
	switch {
	case get(doc, "openapi") != nil:
		var b *bundler
		if read != nil {
			// Hashed as written, before the refs are brought in.
			b = newBundler(read, rel, doc, data)
			if err := b.bundle(); err != nil {
				return nil, err
			}
			sources = b.sources
		}
		c, err = parseOpenAPI(doc, name, rel, b)
	case get(doc, "swagger") != nil:
		return nil, errors.New("a Swagger 2.0 document: convert it to OpenAPI 3.0 or 3.1 (paths and components.schemas are read from those)")
	default:
		if c, err = parseToolhost(doc, data); err == nil {
			for i := range c.Endpoints {
				c.Endpoints[i].File = rel
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if len(c.Endpoints) == 0 && len(c.Schemas) == 0 {
		if c.Format == FormatToolhost {
			return nil, fmt.Errorf("contract %s has no routes and no types: endpoints is empty; list the endpoints [{id, method, path, response, status}], or write an OpenAPI 3 document (openapi, paths, components.schemas)", c.Name)
		}
		return nil, fmt.Errorf("contract %s has no routes and no types: the OpenAPI document has no paths and no components.schemas", c.Name)
	}
	if c.SHA256, err = hashSources(sources); err != nil {
		return nil, err
	}
	for _, s := range sources[1:] {
		c.Files = append(c.Files, s.rel)
	}
	sort.Strings(c.Files)
	return c, nil
}

// get returns the value of key in a mapping node, or nil.
func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// toJSON converts a node to JSON: mapping keys as strings (an OpenAPI
// response code 200 unquoted is the key "200"), scalars by their YAML type,
// aliases followed.
func toJSON(n *yaml.Node) (json.RawMessage, error) {
	v, err := toValue(n, 0)
	if err != nil {
		return nil, err
	}
	return encode(v)
}

// maxDepth bounds nesting (and alias expansion) of a contract.
const maxDepth = 200

// ordered is a mapping that keeps its keys in document order when encoded.
type ordered struct {
	keys []string
	vals map[string]any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func toValue(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested deeper than %d levels (or an alias that refers to itself)", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return toValue(n.Content[0], depth+1)
	case yaml.AliasNode:
		return toValue(n.Alias, depth+1)
	case yaml.MappingNode:
		o := ordered{vals: map[string]any{}}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			v, err := toValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v
		}
		return o, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := toValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	switch n.Tag {
	case "!!null":
		return nil, nil
	case "!!int", "!!float":
		// Numbers as written, when JSON can write them so.
		if jsonNumber().MatchString(n.Value) {
			return json.Number(n.Value), nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return nil, fmt.Errorf("line %d: %s is not a number JSON can hold", n.Line, n.Value)
		}
		return v, nil
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return v, nil
	}
	return n.Value, nil
}

// tkEndpoint is an endpoint of the toolhost format.
type tkEndpoint struct {
	ID       string          `json:"id"`
	Method   string          `json:"method"`
	Path     string          `json:"path"`
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response"`
	Status   int             `json:"status"`
}

// parseToolhost reads the toolhost format, with the line of each endpoint
// from the node tree.
func parseToolhost(doc *yaml.Node, data []byte) (*Contract, error) {
	js := data
	if isYAML(data) {
		var err error
		if js, err = toJSON(doc); err != nil {
			return nil, err
		}
	}
	var tk struct {
		Name        string                     `json:"name"`
		Version     string                     `json:"version"`
		Endpoints   []tkEndpoint               `json:"endpoints"`
		Definitions map[string]json.RawMessage `json:"definitions"`
		Defs        map[string]json.RawMessage `json:"$defs"`
		Components  struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(js, &tk); err != nil {
		return nil, fmt.Errorf("contract does not have the toolhost shape {name, version, endpoints:[{id, method, path, request?, response, status}]}: %v", err)
	}
	if tk.Name == "" {
		return nil, errors.New("contract has no name (the toolhost format needs {name, version, endpoints}; an OpenAPI document starts with openapi: 3.x)")
	}
	c := &Contract{Name: tk.Name, Version: tk.Version, Format: FormatToolhost, Schemas: map[string]json.RawMessage{}}
	// An endpoint's line is its id's, where it says which endpoint it is.
	var lines []int
	if eps := get(doc, "endpoints"); eps != nil && eps.Kind == yaml.SequenceNode {
		for _, e := range eps.Content {
			line := e.Line
			for i := 0; e.Kind == yaml.MappingNode && i+1 < len(e.Content); i += 2 {
				if e.Content[i].Value == "id" {
					line = e.Content[i].Line
				}
			}
			lines = append(lines, line)
		}
	}
	for i, e := range tk.Endpoints {
		if e.ID == "" || e.Method == "" || e.Path == "" {
			return nil, fmt.Errorf("contract %s: endpoints[%d] needs id, method and path", c.Name, i)
		}
		ep := Endpoint{ID: e.ID, Method: strings.ToUpper(e.Method), Path: e.Path, Request: nonNull(e.Request), Response: nonNull(e.Response), Status: e.Status}
		if i < len(lines) {
			ep.Line = lines[i]
		}
		c.Endpoints = append(c.Endpoints, ep)
	}
	for prefix, m := range map[string]map[string]json.RawMessage{"#/definitions/": tk.Definitions, "#/$defs/": tk.Defs, "#/components/schemas/": tk.Components.Schemas} {
		for k, v := range m {
			c.Schemas[prefix+EscapePointer(k)] = v
		}
	}
	return c, nil
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// EscapePointer escapes a name for a JSON pointer segment.
func EscapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// SchemaRefs returns the keys of Schemas, sorted.
func (c *Contract) SchemaRefs() []string {
	refs := make([]string, 0, len(c.Schemas))
	for k := range c.Schemas {
		refs = append(refs, k)
	}
	sort.Strings(refs)
	return refs
}
