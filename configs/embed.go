// Package configs embeds the default agent templates (agents.json) and tool
// policy (tools.json), so that toolhost runs from any folder. Files given with
// --agents / --policy override them.
package configs

import _ "embed"

// AgentsJSON is the embedded configs/agents.json.
//
//go:embed agents.json
var AgentsJSON []byte

// ToolsJSON is the embedded configs/tools.json.
//
//go:embed tools.json
var ToolsJSON []byte
