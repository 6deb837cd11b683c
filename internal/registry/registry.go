package registry

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/xeipuuv/gojsonschema"

	"github.com/toolhost/toolhost/internal/tool"
)

// Entry is a registered tool with its compiled input schema.
type Entry struct {
	Tool   tool.Tool
	Spec   *tool.Spec
	Schema *gojsonschema.Schema
}

// Registry is an ordered set of tools. Add is for start-up; Lookup and List
// are safe for concurrent use with Replace (upstream tools change at run time).
type Registry struct {
	mu      sync.RWMutex
	byName  map[string]*Entry
	ordered []*Entry
}

// New returns an empty registry.
func New() *Registry { return &Registry{byName: map[string]*Entry{}} }

// Compile compiles a JSON Schema for validation.
func Compile(schema json.RawMessage) (*gojsonschema.Schema, error) {
	return gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schema))
}

// Add registers t; it panics on an invalid or duplicate name or a schema that
// does not compile, because either is a programming error.
func (r *Registry) Add(t tool.Tool) {
	e, err := r.entry(t)
	if err != nil {
		panic("registry: " + err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[e.Spec.Name]; dup {
		panic(fmt.Sprintf("registry: duplicate tool name %q", e.Spec.Name))
	}
	r.byName[e.Spec.Name] = e
	r.ordered = append(r.ordered, e)
}

func (r *Registry) entry(t tool.Tool) (*Entry, error) {
	s := t.Spec()
	if !tool.NamePattern.MatchString(s.Name) {
		return nil, fmt.Errorf("tool name %q does not match %s", s.Name, tool.NamePattern)
	}
	sch, err := Compile(s.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema does not compile: %v", s.Name, err)
	}
	if _, err := Compile(s.OutputSchema); err != nil {
		return nil, fmt.Errorf("tool %s: output schema does not compile: %v", s.Name, err)
	}
	return &Entry{Tool: t, Spec: s, Schema: sch}, nil
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

// Names returns the tool names in binding order.
func (r *Registry) Names() []string {
	l := r.List()
	names := make([]string, len(l))
	for i, e := range l {
		names[i] = e.Spec.Name
	}
	return names
}
