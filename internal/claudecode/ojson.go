package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// node is a JSON value that keeps what a person wrote: object members in
// their order, and every scalar (string, number, true, false, null) as its
// exact source text.
type node struct {
	// kind is '{', '[' or 0 for a scalar.
	kind    byte
	members []member
	items   []*node
	raw     []byte
}

type member struct {
	key string
	val *node
}

// parseNode reads one JSON document.
func parseNode(data []byte) (*node, error) {
	if !json.Valid(data) {
		// The standard library's words for what is wrong.
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil {
			err = errors.New("not valid JSON")
		}
		return nil, err
	}
	p := &parser{data: data}
	n := p.value()
	return n, nil
}

// parser walks valid JSON (json.Valid checked it first).
type parser struct {
	data []byte
	pos  int
}

func (p *parser) space() {
	for p.pos < len(p.data) && strings.IndexByte(" \t\r\n", p.data[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *parser) value() *node {
	p.space()
	switch p.data[p.pos] {
	case '{':
		p.pos++
		n := &node{kind: '{', members: []member{}}
		for {
			p.space()
			if p.data[p.pos] == '}' {
				p.pos++
				return n
			}
			if p.data[p.pos] == ',' {
				p.pos++
				p.space()
			}
			keyRaw := p.scalar()
			var key string
			_ = json.Unmarshal(keyRaw, &key)
			p.space()
			p.pos++ // ':'
			n.members = append(n.members, member{key: key, val: p.value()})
		}
	case '[':
		p.pos++
		n := &node{kind: '[', items: []*node{}}
		for {
			p.space()
			if p.data[p.pos] == ']' {
				p.pos++
				return n
			}
			if p.data[p.pos] == ',' {
				p.pos++
			}
			n.items = append(n.items, p.value())
		}
	}
	return &node{raw: p.scalar()}
}

// scalar returns the source text of the string, number or literal at pos.
func (p *parser) scalar() []byte {
	start := p.pos
	if p.data[p.pos] == '"' {
		p.pos++
		for p.data[p.pos] != '"' {
			if p.data[p.pos] == '\\' {
				p.pos++
			}
			p.pos++
		}
		p.pos++
		return p.data[start:p.pos]
	}
	for p.pos < len(p.data) && strings.IndexByte(",]} \t\r\n", p.data[p.pos]) < 0 {
		p.pos++
	}
	return p.data[start:p.pos]
}

// get returns the member key of an object, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for _, m := range n.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// set replaces the value of key in place, or appends the member.
func (n *node) set(key string, v *node) {
	for i, m := range n.members {
		if m.key == key {
			n.members[i].val = v
			return
		}
	}
	n.members = append(n.members, member{key: key, val: v})
}

// str returns a string scalar's value ("" for anything else).
func (n *node) str() string {
	var s string
	if n == nil || n.kind != 0 || json.Unmarshal(n.raw, &s) != nil {
		return ""
	}
	return s
}

// toNode converts a Go value (of encoding/json's kinds) into a node, with
// map keys in the order keys gives.
func toNode(v any) *node {
	switch v := v.(type) {
	case orderedObject:
		n := &node{kind: '{', members: []member{}}
		for _, m := range v {
			n.members = append(n.members, member{key: m.key, val: toNode(m.val)})
		}
		return n
	case []any:
		n := &node{kind: '[', items: []*node{}}
		for _, it := range v {
			n.items = append(n.items, toNode(it))
		}
		return n
	case *node:
		return v
	}
	return &node{raw: quoteAny(v)}
}

// quote is s as a JSON string, with <, > and & as they are.
func quote(s string) []byte { return quoteAny(s) }

func quoteAny(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("claudecode: %T does not encode: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// orderedObject is an object built in code, in the order written.
type orderedObject []struct {
	key string
	val any
}

// obj builds an orderedObject from key, value pairs.
func obj(kv ...any) orderedObject {
	var o orderedObject
	for i := 0; i+1 < len(kv); i += 2 {
		o = append(o, struct {
			key string
			val any
		}{kv[i].(string), kv[i+1]})
	}
	return o
}

// encode writes n indented by two spaces, as json.MarshalIndent would,
// with a trailing newline.
func (n *node) encode() []byte {
	var b bytes.Buffer
	n.write(&b, 0)
	b.WriteByte('\n')
	return b.Bytes()
}

func (n *node) write(b *bytes.Buffer, depth int) {
	indent := func(d int) {
		b.WriteByte('\n')
		for range d {
			b.WriteString("  ")
		}
	}
	switch n.kind {
	case '{':
		if len(n.members) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, m := range n.members {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			b.Write(quote(m.key))
			b.WriteString(": ")
			m.val.write(b, depth+1)
		}
		indent(depth)
		b.WriteByte('}')
	case '[':
		if len(n.items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			it.write(b, depth+1)
		}
		indent(depth)
		b.WriteByte(']')
	default:
		b.Write(n.raw)
	}
}
