package rules

import (
	"encoding/json"

	"github.com/toolhost/toolhost/internal/tool"
)

// ClaudeTools are Claude CLI's built-in tools as its PreToolUse hook
// receives them (tool_name, the fields of tool_input), for `toolhost hook
// pretooluse`: the rules type args of a rule naming one by these fields.
// The CLI may send fields not listed here; a rule can read only these.
// Grep has many flags (-i, -A …): its args are a map, args["-i"].
var ClaudeTools = []Tool{
	{Name: "Bash", Commands: true, InputSchema: object(`
		"command": {"type": "string"}, "description": {"type": "string"},
		"timeout": {"type": "integer"}, "run_in_background": {"type": "boolean"}`)},
	{Name: "Write", InputSchema: object(`"file_path": {"type": "string"}, "content": {"type": "string"}`)},
	{Name: "Edit", InputSchema: object(`"file_path": {"type": "string"}, "old_string": {"type": "string"},
		"new_string": {"type": "string"}, "replace_all": {"type": "boolean"}`)},
	{Name: "MultiEdit", InputSchema: object(`"file_path": {"type": "string"}, "edits": {"type": "array", "items":
		{"type": "object", "additionalProperties": false, "properties": {"old_string": {"type": "string"},
		"new_string": {"type": "string"}, "replace_all": {"type": "boolean"}}}}`)},
	{Name: "NotebookEdit", InputSchema: object(`"notebook_path": {"type": "string"}, "new_source": {"type": "string"},
		"cell_id": {"type": "string"}, "cell_type": {"type": "string"}, "edit_mode": {"type": "string"}`)},
	{Name: "Read", InputSchema: object(`"file_path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}`)},
	{Name: "Glob", InputSchema: object(`"pattern": {"type": "string"}, "path": {"type": "string"}`)},
	{Name: "Grep", InputSchema: json.RawMessage(`{"type": "object"}`)},
	{Name: "WebFetch", InputSchema: object(`"url": {"type": "string"}, "prompt": {"type": "string"}`)},
	{Name: "WebSearch", InputSchema: object(`"query": {"type": "string"},
		"allowed_domains": {"type": "array", "items": {"type": "string"}},
		"blocked_domains": {"type": "array", "items": {"type": "string"}}`)},
}

func object(props string) json.RawMessage {
	return json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {` + props + `}}`)
}

// Catalog is the tools rules are compiled against: the given toolhost
// tools (the built-ins; upstream tools are left out, their schemas are not
// known when a policy loads) and Claude CLI's built-ins. Every place that
// compiles a policy — serve, the hook, `policy check` and `policy explain`
// — uses it, so a rule compiles the same way in each.
func Catalog(specs []*tool.Spec) []Tool {
	out := make([]Tool, 0, len(specs)+len(ClaudeTools))
	for _, s := range specs {
		if s.Source != "" && s.Source != "builtin" {
			continue
		}
		out = append(out, Tool{Name: s.Name, InputSchema: s.InputSchema, Commands: s.Commands != nil})
	}
	return append(out, ClaudeTools...)
}
