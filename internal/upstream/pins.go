package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pmezard/go-difflib/difflib"

	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/fault"
)

// PinsPath is the project's store of pinned upstream tool definitions.
const PinsPath = ".toolhost/pins.json"

// How a definition came to be pinned.
const (
	PinnedFirstSeen = "first-seen"
	PinnedTrustNew  = "trust-new"
	PinnedApproved  = "approved"
)

// PinsDoor is the part of the sandbox door the pin store needs.
type PinsDoor interface {
	Update(rel string, fn func(old []byte) ([]byte, error)) error
	ReadFile(rel string) ([]byte, error)
}

// Pins is the pin store of one project (PinsPath). Every change is a
// read-modify-write under the file's lock (the door's Update), so the
// sessions of several agents and `toolhost upstream approve` never lose
// each other's changes.
type Pins struct {
	Door PinsDoor
	// ProjectDir is named in the approve command a withheld tool's
	// message gives.
	ProjectDir string
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// pinsDoc is the document at PinsPath.
type pinsDoc struct {
	Servers map[string]*serverPins `json:"servers"`
}

// serverPins are one upstream's pinned definitions, by the upstream's own
// tool name. A server is recorded the first time it is discovered, even
// with no tools, so a tool it offers later counts as new.
type serverPins struct {
	Tools map[string]*PinnedDef `json:"tools"`
	// Pending are definitions a discovery withheld, waiting for approve.
	Pending map[string]*PinnedDef `json:"pending,omitempty"`
}

// PinnedDef is one definition of an upstream tool.
type PinnedDef struct {
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"`
	// At is when it was pinned (tools) or first withheld (pending).
	At time.Time `json:"at"`
	// How is PinnedFirstSeen, PinnedTrustNew or PinnedApproved (pins only).
	How string `json:"how,omitempty"`
}

// Def is an upstream tool's definition as it is pinned: everything the
// model reads of the tool and everything that decides how it is called
// (name, title, description, input and output schema, annotations), as
// canonical JSON (sorted keys, no white space), and its hash.
type Def struct {
	Tool string
	Hash string
	JSON json.RawMessage
}

// defFields are the fields of a definition, in the order a change names
// them.
var defFields = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// DefOf is the definition of t.
func DefOf(t *mcp.Tool) (Def, error) {
	v := struct {
		Name         string               `json:"name"`
		Title        string               `json:"title,omitempty"`
		Description  string               `json:"description,omitempty"`
		InputSchema  any                  `json:"inputSchema,omitempty"`
		OutputSchema any                  `json:"outputSchema,omitempty"`
		Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
	}{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations}
	b, err := json.Marshal(v)
	if err != nil {
		return Def{}, err
	}
	c, err := contract.Canonical(b)
	if err != nil {
		return Def{}, err
	}
	sum := sha256.Sum256(c)
	return Def{Tool: t.Name, Hash: "sha256:" + hex.EncodeToString(sum[:]), JSON: c}, nil
}

// Verdict is what the pins say of one tool of a discovery.
type Verdict struct {
	Def
	// Pinned is the hash pinned before ("" for a tool without a pin).
	Pinned string
	// Withheld: the definition is not the pinned one, or the tool is new
	// on a server whose tools are pinned; Change says which.
	Withheld bool
	Change   string
	// NewPin is how this check pinned the tool ("" when it did not).
	NewPin string
}

func (p *Pins) now() time.Time {
	if p.Now != nil {
		return p.Now().UTC()
	}
	return time.Now().UTC()
}

// Check decides, under the store's lock, which of a discovery's tools the
// pins let through: a tool whose definition is the pinned one; every tool of
// a server seen for the first time, and with trustNew a tool new on a pinned
// server, both pinned now. Any other is withheld and its definition kept as
// pending for approve; a tool that is let through again loses its pending
// entry. The file is written only when something changed.
func (p *Pins) Check(server string, defs []Def, trustNew bool) ([]Verdict, error) {
	var out []Verdict
	err := p.Door.Update(PinsPath, func(old []byte) ([]byte, error) {
		doc, err := parsePins(old)
		if err != nil {
			return nil, err
		}
		out = out[:0]
		now := p.now()
		sp := doc.Servers[server]
		first := sp == nil
		if first {
			sp = &serverPins{Tools: map[string]*PinnedDef{}}
			doc.Servers[server] = sp
		}
		changed := first
		for _, d := range defs {
			v := Verdict{Def: d}
			pin := sp.Tools[d.Tool]
			switch {
			case pin != nil && pin.Hash == d.Hash:
			case pin == nil && (first || trustNew):
				v.NewPin = PinnedFirstSeen
				if !first {
					v.NewPin = PinnedTrustNew
				}
				sp.Tools[d.Tool] = &PinnedDef{Hash: d.Hash, Definition: d.JSON, At: now, How: v.NewPin}
				changed = true
			default:
				v.Withheld, v.Change = true, "new tool"
				if pin != nil {
					v.Pinned, v.Change = pin.Hash, changeOf(pin.Definition, d.JSON)
				}
				if pe := sp.Pending[d.Tool]; pe == nil || pe.Hash != d.Hash {
					if sp.Pending == nil {
						sp.Pending = map[string]*PinnedDef{}
					}
					sp.Pending[d.Tool] = &PinnedDef{Hash: d.Hash, Definition: d.JSON, At: now}
					changed = true
				}
			}
			if _, ok := sp.Pending[d.Tool]; ok && !v.Withheld {
				delete(sp.Pending, d.Tool)
				changed = true
			}
			out = append(out, v)
		}
		if !changed {
			return nil, nil
		}
		return encodePins(doc)
	})
	return out, err
}

// Sum identifies the store's current content (a changed file, such as an
// approval, changes it); a missing or unreadable file has the sum of
// nothing.
func (p *Pins) Sum() [32]byte {
	b, _ := p.Door.ReadFile(PinsPath)
	return sha256.Sum256(b)
}

// Approval is one definition approve pinned (or, dry, would pin).
type Approval struct {
	Server string
	Tool   string // the upstream's name
	Served string // the name toolhost serves it under
	// Old is the definition pinned before (nil for a new tool).
	Old *PinnedDef
	New *PinnedDef
	// Change names what differs ("description, inputSchema", "new tool").
	Change string
}

// Approve pins the pending definitions that target names, under the
// store's lock: target is a served tool name (SERVER__TOOL) or a server's
// name (all its pending tools). With dry nothing is written.
func (p *Pins) Approve(target string, dry bool) ([]Approval, error) {
	var out []Approval
	err := p.Door.Update(PinsPath, func(old []byte) ([]byte, error) {
		doc, err := parsePins(old)
		if err != nil {
			return nil, err
		}
		out = out[:0]
		var waiting []string
		for _, server := range slices.Sorted(maps.Keys(doc.Servers)) {
			sp := doc.Servers[server]
			for _, name := range slices.Sorted(maps.Keys(sp.Pending)) {
				served, _ := ToolName(server, name)
				waiting = append(waiting, served)
				if served == target || server == target {
					a := Approval{Server: server, Tool: name, Served: served, Old: sp.Tools[name], New: sp.Pending[name], Change: "new tool"}
					if a.Old != nil {
						a.Change = changeOf(a.Old.Definition, a.New.Definition)
					}
					out = append(out, a)
				}
			}
		}
		if len(out) == 0 {
			if len(waiting) == 0 {
				return nil, fmt.Errorf("nothing waits for approval in this project: no upstream tool is withheld (a tool is withheld when a session discovers a definition that differs from its pin)")
			}
			return nil, fmt.Errorf("nothing named %q waits for approval; waiting: %s (approve one of them, or a server's name for all of its tools)", target, strings.Join(waiting, ", "))
		}
		if dry {
			return nil, nil
		}
		now := p.now()
		for _, a := range out {
			sp := doc.Servers[a.Server]
			sp.Tools[a.Tool] = &PinnedDef{Hash: a.New.Hash, Definition: a.New.Definition, At: now, How: PinnedApproved}
			delete(sp.Pending, a.Tool)
		}
		return encodePins(doc)
	})
	return out, err
}

// Diff is a unified diff of the pinned and the new definition (indented
// JSON), for the human who approves it.
func (a Approval) Diff() string {
	oldName, oldText := "(no pinned definition: a new tool)", ""
	if a.Old != nil {
		oldName, oldText = fmt.Sprintf("%s pinned %s (%s %s)", a.Served, a.Old.Hash, a.Old.How, a.Old.At.Format(time.RFC3339)), indentJSON(a.Old.Definition)
	}
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(oldText), B: difflib.SplitLines(indentJSON(a.New.Definition)),
		FromFile: oldName, ToFile: fmt.Sprintf("%s offered %s (withheld %s)", a.Served, a.New.Hash, a.New.At.Format(time.RFC3339)),
		Context: 3,
	})
	return d
}

func indentJSON(b json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return string(b) + "\n"
	}
	return buf.String() + "\n"
}

// changeOf names the fields in which two definitions differ.
func changeOf(old, cur json.RawMessage) string {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal(old, &a)
	_ = json.Unmarshal(cur, &b)
	canon := func(r json.RawMessage) string {
		if r == nil {
			return ""
		}
		c, err := contract.Canonical(r)
		if err != nil {
			return string(r)
		}
		return string(c)
	}
	var fields []string
	for _, f := range defFields {
		if canon(a[f]) != canon(b[f]) {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return "definition"
	}
	return strings.Join(fields, ", ")
}

func parsePins(b []byte) (*pinsDoc, error) {
	doc := &pinsDoc{}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, doc); err != nil {
			return nil, &fault.CorruptFile{Path: PinsPath, Format: "JSON", Err: err}
		}
	}
	if doc.Servers == nil {
		doc.Servers = map[string]*serverPins{}
	}
	for name, sp := range doc.Servers {
		if sp == nil {
			return nil, &fault.CorruptFile{Path: PinsPath, Format: "JSON", Err: fmt.Errorf("servers.%s is null", name)}
		}
		if sp.Tools == nil {
			sp.Tools = map[string]*PinnedDef{}
		}
		for tool, d := range sp.Tools {
			if d == nil || d.Hash == "" {
				return nil, &fault.CorruptFile{Path: PinsPath, Format: "JSON", Err: fmt.Errorf("servers.%s.tools.%s has no hash", name, tool)}
			}
		}
	}
	return doc, nil
}

func encodePins(doc *pinsDoc) ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
