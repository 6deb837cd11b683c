package contract

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// An OpenAPI contract split over files is read as one document: every
// $ref to another file (./paths/orders.yaml, ../common.yaml#/Error) is
// resolved relative to the file that holds it, as OpenAPI resolves them.
// What the ref stands in for decides how it is brought in:
//   - a schema (a ref under a `schema`, inside components.schemas, or in a
//     schema itself) becomes a shared schema of the contract,
//     #/components/schemas/<name>, named after the pointer's last segment
//     or the file (the name a components.schemas entry gives it first), so
//     the types generated from it are named types, once, and a schema that
//     refers to itself stays a reference;
//   - anything else (a path item, a request body, a response, a parameter)
//     is copied in its place, with the refs inside it resolved in turn
//     relative to its own file.
// Refs within the contract file itself are left as they are: the readers
// follow them where they look.

// Reader reads a project-relative file.
type Reader func(rel string) ([]byte, error)

// bundler resolves the external refs of one contract.
type bundler struct {
	read    Reader
	rootRel string
	root    *yaml.Node // the contract's top-level mapping
	docs    map[string]*yaml.Node
	// sources are the bytes of every file read, the contract's own first.
	sources []source
	// schemaNames maps "file#pointer" to the shared schema it became.
	schemaNames map[string]string
	taken       map[string]bool
	added       []namedNode
	// origin is the file a copied node came from.
	origin map[*yaml.Node]string
}

type source struct {
	rel  string
	data []byte
}

type namedNode struct {
	name string
	node *yaml.Node
}

// maxRefFiles bounds how many files one contract may reach.
const maxRefFiles = 200

func newBundler(read Reader, rootRel string, root *yaml.Node, data []byte) *bundler {
	b := &bundler{read: read, rootRel: rootRel, root: root, docs: map[string]*yaml.Node{rootRel: root},
		sources: []source{{rootRel, data}}, schemaNames: map[string]string{}, taken: map[string]bool{}, origin: map[*yaml.Node]string{}}
	schemas := get(get(root, "components"), "schemas")
	for i := 0; schemas != nil && i+1 < len(schemas.Content); i += 2 {
		name := schemas.Content[i].Value
		b.taken[name] = true
		b.schemaNames[rootRel+"#/components/schemas/"+EscapePointer(name)] = name
	}
	// A components.schemas entry that is a ref to another file names that
	// schema: every other ref to it becomes a ref to the entry.
	for i := 0; schemas != nil && i+1 < len(schemas.Content); i += 2 {
		if ref := get(schemas.Content[i+1], "$ref"); ref != nil && !strings.HasPrefix(ref.Value, "#") {
			if file, ptr, err := b.target(rootRel, ref.Value); err == nil {
				b.schemaNames[file+"#"+ptr] = schemas.Content[i].Value
			}
		}
	}
	return b
}

// bundle resolves every external ref of the contract in place and adds the
// schemas they brought to components.schemas.
func (b *bundler) bundle() error {
	if err := b.walk(b.root, b.rootRel, false, "", nil); err != nil {
		return err
	}
	if len(b.added) == 0 {
		return nil
	}
	comps := get(b.root, "components")
	if comps == nil {
		comps = &yaml.Node{Kind: yaml.MappingNode}
		b.root.Content = append(b.root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "components"}, comps)
	}
	schemas := get(comps, "schemas")
	if schemas == nil {
		schemas = &yaml.Node{Kind: yaml.MappingNode}
		comps.Content = append(comps.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "schemas"}, schemas)
	}
	for _, a := range b.added {
		schemas.Content = append(schemas.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: a.name}, a.node)
	}
	return nil
}

// walk resolves the refs under n, a node of file; inSchema says n is (in)
// a schema; where names n for errors; stack holds the refs being copied,
// to refuse a loop.
func (b *bundler) walk(n *yaml.Node, file string, inSchema bool, where string, stack []string) error {
	switch n.Kind {
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := b.walk(c, file, inSchema, where+"["+strconv.Itoa(i)+"]", stack); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		if ref := get(n, "$ref"); ref != nil && ref.Kind == yaml.ScalarNode {
			return b.resolve(n, ref.Value, file, inSchema, where, stack)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			child := inSchema || k == "schema" || k == "schemas" && where == "components"
			next := k
			if where != "" {
				next = where + "." + k
			}
			if err := b.walk(n.Content[i+1], file, child, next, stack); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolve brings in what the ref in n stands for.
func (b *bundler) resolve(n *yaml.Node, ref, file string, inSchema bool, where string, stack []string) error {
	if strings.HasPrefix(ref, "#") && file == b.rootRel {
		return nil // within the contract file: followed where it is read
	}
	tfile, ptr, err := b.target(file, ref)
	if err != nil {
		return fmt.Errorf("%s: $ref %q: %v", refWhere(where, file, b.rootRel), ref, err)
	}
	key := tfile + "#" + ptr
	topEntry := file == b.rootRel && strings.HasPrefix(where, "components.schemas.") && strings.Count(where, ".") == 2
	if inSchema && !topEntry {
		name, err := b.schema(key, tfile, ptr, where, stack)
		if err != nil {
			return err
		}
		*n = yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Value: "$ref"}, {Kind: yaml.ScalarNode, Value: "#/components/schemas/" + EscapePointer(name)}}}
		return nil
	}
	for _, s := range stack {
		if s == key {
			return fmt.Errorf("%s: $ref %q: the files refer to each other in a loop (%s)", refWhere(where, file, b.rootRel), ref, strings.Join(append(stack, key), " → "))
		}
	}
	target, err := b.node(tfile, ptr)
	if err != nil {
		return fmt.Errorf("%s: $ref %q: %v", refWhere(where, file, b.rootRel), ref, err)
	}
	cp := deepCopy(target)
	if err := b.walk(cp, tfile, inSchema, where, append(stack, key)); err != nil {
		return err
	}
	*n = *cp
	if _, ok := b.origin[n]; !ok || tfile != b.rootRel {
		b.origin[n] = tfile
	}
	return nil
}

// schema returns the shared schema a ref to a schema becomes, bringing the
// schema in the first time.
func (b *bundler) schema(key, tfile, ptr, where string, stack []string) (string, error) {
	if name, ok := b.schemaNames[key]; ok {
		return name, nil
	}
	target, err := b.node(tfile, ptr)
	if err != nil {
		return "", fmt.Errorf("%s: $ref to %s#%s: %v", where, tfile, ptr, err)
	}
	name := schemaName(tfile, ptr)
	for i := 2; b.taken[name]; i++ {
		name = schemaName(tfile, ptr) + strconv.Itoa(i)
	}
	b.taken[name] = true
	// Named before its own refs are resolved, so a schema that refers to
	// itself refers to its name.
	b.schemaNames[key] = name
	cp := deepCopy(target)
	if err := b.walk(cp, tfile, true, "components.schemas."+name, stack); err != nil {
		return "", err
	}
	b.added = append(b.added, namedNode{name, cp})
	return name, nil
}

// schemaName names a schema brought from another file: the pointer's last
// segment, else the file's name without its extension.
func schemaName(file, ptr string) string {
	if i := strings.LastIndex(ptr, "/"); i >= 0 && i+1 < len(ptr) {
		return unescapePointer(ptr[i+1:])
	}
	base := path.Base(file)
	return strings.TrimSuffix(base, path.Ext(base))
}

// target resolves ref, written in file, to the project-relative file and
// the JSON pointer it names.
func (b *bundler) target(file, ref string) (string, string, error) {
	filePart, ptr, _ := strings.Cut(ref, "#")
	if strings.Contains(filePart, "://") {
		return "", "", errors.New("a ref to a URL is not fetched; keep the referenced file in the project and ref it by a relative path")
	}
	if path.IsAbs(filePart) {
		return "", "", errors.New("an absolute path; ref the file relative to the one that refers to it")
	}
	tfile := file
	if filePart != "" {
		tfile = path.Join(path.Dir(file), filePart)
		if tfile == ".." || strings.HasPrefix(tfile, "../") {
			return "", "", errors.New("it points outside the project")
		}
	}
	if ptr != "" && !strings.HasPrefix(ptr, "/") {
		return "", "", fmt.Errorf("the fragment %q is not a JSON pointer (#/a/b)", ptr)
	}
	return tfile, ptr, nil
}

// node returns the node at ptr in file, reading and parsing the file the
// first time.
func (b *bundler) node(file, ptr string) (*yaml.Node, error) {
	doc, ok := b.docs[file]
	if !ok {
		if len(b.docs) > maxRefFiles {
			return nil, fmt.Errorf("more than %d files referenced", maxRefFiles)
		}
		data, err := b.read(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist", file)
		}
		if err != nil {
			return nil, fmt.Errorf("%s cannot be read: %v", file, err)
		}
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return nil, fmt.Errorf("%s is not valid YAML or JSON: %v", file, err)
		}
		if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
			return nil, fmt.Errorf("%s is empty", file)
		}
		doc = root.Content[0]
		b.docs[file] = doc
		b.sources = append(b.sources, source{file, data})
	}
	cur := doc
	if ptr == "" {
		return cur, nil
	}
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = unescapePointer(seg)
		switch cur.Kind {
		case yaml.MappingNode:
			cur = get(cur, seg)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(cur.Content) {
				cur = nil
			} else {
				cur = cur.Content[i]
			}
		default:
			cur = nil
		}
		if cur == nil {
			return nil, fmt.Errorf("%s has nothing at #%s", file, ptr)
		}
	}
	return cur, nil
}

// refWhere names the place of a ref for an error: its path in the contract,
// and the file when it is not the contract's.
func refWhere(where, file, root string) string {
	if where == "" {
		where = "(top level)"
	}
	if file != root {
		return where + " (in " + file + ")"
	}
	return where
}

func unescapePointer(s string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// deepCopy copies a node tree, aliases followed, so the same file
// referenced twice yields two independent trees.
func deepCopy(n *yaml.Node) *yaml.Node {
	return copyDepth(n, 0)
}

func copyDepth(n *yaml.Node, depth int) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil && depth < maxDepth {
		return copyDepth(n.Alias, depth+1)
	}
	cp := *n
	if len(n.Content) > 0 && depth < maxDepth {
		cp.Content = make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			cp.Content[i] = copyDepth(c, depth+1)
		}
	}
	return &cp
}
