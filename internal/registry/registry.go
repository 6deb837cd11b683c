package registry

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/toolhost/toolhost/internal/schema"
	"github.com/toolhost/toolhost/internal/tool"
)

// Entry is a registered tool with its compiled input schema.
type Entry struct {
	Tool tool.Tool
	Spec *tool.Spec

	validator func() (*schema.Schema, error)
}

// Validator returns the compiled input schema. A built-in tool's schema is
// compiled on the first call of that tool, so a session pays only for the
// tools it uses (tools/all's tests compile every one, so a built-in schema
// that does not compile never ships); an upstream tool's was compiled when
// its source was set, and one that did not compile was left out.
func (e *Entry) Validator() (*schema.Schema, error) { return e.validator() }

// Registry is an ordered set of tools. Add is for start-up; Lookup and List
// are safe for concurrent use with SetSource (upstream tools change at run
// time).
type Registry struct {
	mu       sync.RWMutex
	builtins []*Entry
	sources  map[string]*sourceSet
	byName   map[string]*Entry
	ordered  []*Entry
	skipped  []Skipped
}

// sourceSet is what one non-builtin source offers, before name clashes are
// resolved; keeping it lets a shadowed tool come back when the source that
// shadowed it goes away.
type sourceSet struct {
	rank    int
	entries []*Entry
	invalid []Skipped
}

// Skipped is a tool a source offers that the registry does not serve.
type Skipped struct {
	Name   string
	Source string
	Reason string
}

// New returns an empty registry.
func New() *Registry { return &Registry{byName: map[string]*Entry{}, sources: map[string]*sourceSet{}} }

// Compile compiles a tool's JSON Schema for validation (schema.Compile).
func Compile(doc json.RawMessage) (*schema.Schema, error) { return schema.Compile(doc) }

// Add registers t; it panics on an invalid or duplicate name or a schema that
// does not compile, because either is a programming error.
func (r *Registry) Add(t tool.Tool) {
	e, err := r.entry(t)
	if err != nil {
		panic("registry: " + err.Error())
	}
	r.addBuiltins([]*Entry{e})
}

// addBuiltins appends entries to the built-ins; a name already held by a
// built-in (or twice among entries) panics.
func (r *Registry) addBuiltins(entries []*Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(r.builtins)+len(entries))
	for _, b := range r.builtins {
		seen[b.Spec.Name] = true
	}
	for _, e := range entries {
		if seen[e.Spec.Name] {
			panic(fmt.Sprintf("registry: duplicate tool name %q", e.Spec.Name))
		}
		seen[e.Spec.Name] = true
	}
	r.builtins = append(r.builtins, entries...)
	r.rebuild()
}

// SetSource atomically replaces every tool of one non-builtin source (such
// as "mcp:github"); an empty tools removes the source. rank places the
// source after the built-ins and relative to the other sources (an
// upstream's index in the policy file), so the binding order is the same
// whatever order discovery finishes in.
//
// Unlike Add it never panics: a tool with an invalid name or a schema that
// does not compile, or whose name a built-in or a lower-ranked source
// already holds, is left out. SetSource returns every tool left out across
// all sources after the change, so the caller can log and show them.
func (r *Registry) SetSource(source string, rank int, tools []tool.Tool) []Skipped {
	set := &sourceSet{rank: rank}
	for _, t := range tools {
		e, err := r.entry(t)
		if err != nil {
			set.invalid = append(set.invalid, Skipped{Name: t.Spec().Name, Source: source, Reason: err.Error()})
			continue
		}
		set.entries = append(set.entries, e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(tools) == 0 {
		delete(r.sources, source)
	} else {
		r.sources[source] = set
	}
	r.rebuild()
	return append([]Skipped(nil), r.skipped...)
}

// rebuild recomputes the served set: built-ins first in their order, then
// each source by rank (name for equal ranks); the first holder of a name
// keeps it. The caller holds r.mu.
func (r *Registry) rebuild() {
	byName := make(map[string]*Entry, len(r.byName))
	ordered := make([]*Entry, 0, len(r.ordered))
	for _, e := range r.builtins {
		byName[e.Spec.Name] = e
		ordered = append(ordered, e)
	}
	names := make([]string, 0, len(r.sources))
	for n := range r.sources {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := r.sources[names[i]], r.sources[names[j]]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return names[i] < names[j]
	})
	var skipped []Skipped
	for _, n := range names {
		set := r.sources[n]
		skipped = append(skipped, set.invalid...)
		for _, e := range set.entries {
			if held, dup := byName[e.Spec.Name]; dup {
				skipped = append(skipped, Skipped{Name: e.Spec.Name, Source: n,
					Reason: fmt.Sprintf("name already taken by %s, which comes first", held.Spec.Source)})
				continue
			}
			byName[e.Spec.Name] = e
			ordered = append(ordered, e)
		}
	}
	r.byName, r.ordered, r.skipped = byName, ordered, skipped
}

// AddAll registers tools in order like Add. Their input schemas are
// compiled on first use (Entry.Validator).
func (r *Registry) AddAll(tools []tool.Tool) {
	entries := make([]*Entry, len(tools))
	for i, t := range tools {
		s := t.Spec()
		if err := checkName(s.Name); err != nil {
			panic("registry: " + err.Error())
		}
		entries[i] = &Entry{Tool: t, Spec: s, validator: sync.OnceValues(func() (*schema.Schema, error) {
			sch, err := Compile(s.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: input schema does not compile: %v", s.Name, err)
			}
			return sch, nil
		})}
	}
	r.addBuiltins(entries)
}

func checkName(name string) error {
	if !tool.ValidName(name) {
		return fmt.Errorf("tool name %q does not match %s", name, tool.NamePattern())
	}
	return nil
}

func (r *Registry) entry(t tool.Tool) (*Entry, error) {
	s := t.Spec()
	if err := checkName(s.Name); err != nil {
		return nil, err
	}
	sch, err := Compile(s.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema does not compile: %v", s.Name, err)
	}
	// Output schemas are never used for validation at run time; that they
	// compile is checked by the tests of every built-in tool
	// (tools/all.TestToolContract), so start-up does not pay for it.
	return &Entry{Tool: t, Spec: s, validator: func() (*schema.Schema, error) { return sch, nil }}, nil
}

// Lookup returns the entry for name.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	r.mu.RLock()
	e, ok := r.byName[name]
	r.mu.RUnlock()
	return e, ok
}

// List returns the entries in binding order.
func (r *Registry) List() []*Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*Entry(nil), r.ordered...)
}

// Specs returns the tools' specs in binding order.
func (r *Registry) Specs() []*tool.Spec {
	l := r.List()
	specs := make([]*tool.Spec, len(l))
	for i, e := range l {
		specs[i] = e.Spec
	}
	return specs
}

// Names returns the tool names in binding order.
func (r *Registry) Names() []string {
	l := r.List()
	names := make([]string, len(l))
	for i, e := range l {
		names[i] = e.Spec.Name
	}
	return names
}
