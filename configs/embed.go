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
