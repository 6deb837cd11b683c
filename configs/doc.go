// Package configs embeds the default agent templates (agents.json) and tool
// policy (tools.json), so that toolhost runs from any folder. Files given with
// --agents / --policy override them. It holds data only: parsing belongs to
// internal/agents and internal/policy.
package configs
