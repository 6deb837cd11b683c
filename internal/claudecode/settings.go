package claudecode

import (
	"bytes"
	"fmt"
	"strings"
)

// PermissionRules are the allow rules the project's settings get: each
// agent's own server as a whole (mcp__<server>), so the CLI runs the
// toolhost tools an agent is offered without asking for each. Which tools
// an agent has is toolhost's decision (its server lists only those), and
// every call still passes toolhost's gate.
func (p *Project) PermissionRules() []string {
	rules := make([]string, 0, len(p.Agents))
	for _, a := range p.Agents {
		rules = append(rules, "mcp__"+ServerName(a.Agent))
	}
	return rules
}

// MergeSettings returns the project's settings with what toolhost needs
// added: the permission rules and the project's PreToolUse hook (replacing
// a toolhost project hook already there, in its place). Every key and value
// the file holds stays, in its order. When nothing needs adding, the bytes
// are returned unchanged; otherwise the document is written indented by two
// spaces. Settings that are not a JSON object are an error, and nothing is
// changed.
func (p *Project) MergeSettings(existing []byte) ([]byte, error) {
	root := &node{kind: '{', members: []member{}}
	if len(bytes.TrimSpace(existing)) > 0 {
		n, err := parseNode(existing)
		if err != nil {
			return nil, fmt.Errorf("%s is not valid JSON (%v); fix it, then run toolhost init again", SettingsPath, err)
		}
		if n.kind != '{' {
			return nil, fmt.Errorf("%s is not a JSON object; fix it, then run toolhost init again", SettingsPath)
		}
		root = n
	}
	before := root.encode()

	perms, err := objectAt(root, "permissions")
	if err != nil {
		return nil, err
	}
	allow, err := arrayAt(perms, "permissions", "allow")
	if err != nil {
		return nil, err
	}
	for _, r := range p.PermissionRules() {
		found := false
		for _, it := range allow.items {
			found = found || it.str() == r
		}
		if !found {
			allow.items = append(allow.items, toNode(r))
		}
	}

	hooks, err := objectAt(root, "hooks")
	if err != nil {
		return nil, err
	}
	pre, err := arrayAt(hooks, "hooks", "PreToolUse")
	if err != nil {
		return nil, err
	}
	entry := toNode(obj("matcher", p.Matcher, "hooks", []any{obj("type", "command", "command", p.ProjectHook(), "timeout", HookTimeout)}))
	placed := false
	for i, it := range pre.items {
		if p.isProjectHook(it) {
			if !placed {
				pre.items[i] = entry
				placed = true
			}
		}
	}
	if !placed {
		pre.items = append(pre.items, entry)
	}
	after := root.encode()
	if bytes.Equal(after, before) && len(bytes.TrimSpace(existing)) > 0 {
		// Nothing to add: the file stays byte for byte as it is.
		return existing, nil
	}
	return after, nil
}

// isProjectHook reports whether a PreToolUse entry is a project hook
// toolhost init wrote for this project (its command runs a toolhost's hook
// for this project dir, for no one agent, whichever binary): the one init
// replaces, so a toolhost that moved leaves no stale hook behind.
func (p *Project) isProjectHook(entry *node) bool {
	hs := entry.get("hooks")
	if hs == nil || hs.kind != '[' {
		return false
	}
	tail := " " + ShellJoin([]string{"hook", "pretooluse", "--project-dir", p.Dir})
	for _, h := range hs.items {
		cmd := h.get("command").str()
		bin, rest, ok := strings.Cut(cmd, tail)
		if ok && bin != "" && !strings.Contains(bin, " ") && (rest == "" || strings.HasPrefix(rest, " ")) && !strings.Contains(rest, " --agent ") {
			return true
		}
	}
	return false
}

// objectAt returns the object member key of n, adding an empty one at the
// end when missing.
func objectAt(n *node, key string) (*node, error) {
	v := n.get(key)
	if v == nil {
		v = &node{kind: '{', members: []member{}}
		n.set(key, v)
	}
	if v.kind != '{' {
		return nil, fmt.Errorf("%s: %q is not an object; fix it, then run toolhost init again", SettingsPath, key)
	}
	return v, nil
}

// arrayAt returns the array member key of n (under parent, for messages),
// adding an empty one at the end when missing.
func arrayAt(n *node, parent, key string) (*node, error) {
	v := n.get(key)
	if v == nil {
		v = &node{kind: '[', items: []*node{}}
		n.set(key, v)
	}
	if v.kind != '[' {
		return nil, fmt.Errorf("%s: %s.%s is not an array; fix it, then run toolhost init again", SettingsPath, parent, key)
	}
	return v, nil
}
