// Package claudecode is what toolhost writes into a project for Claude Code
// and what it reads of Claude Code's own state: the six devloop agents as
// project agents (.claude/agents/<agent>.md, each with its own toolhost MCP
// server, its PreToolUse hook and a system prompt for its role), the
// project's settings merged without losing a key the user wrote
// (.claude/settings.json), the mark that tells a file toolhost wrote from
// one a person wrote or edited since, and whether Claude Code trusts a
// project folder (it loads a project agent's mcpServers and hooks only
// then).
//
// It renders and merges bytes; it never decides what a file on disk may be
// replaced with (toolhost init does, through Plan) and never writes Claude
// Code's own configuration: trusting a folder is the person's decision.
package claudecode
