// Package policy loads the tool policy (configs/tools.json): per tool a
// permission (read | write | deny), a timeout, a retry budget and whether a
// human must confirm the call, plus the upstream MCP servers and the env
// allow-list for placeholders.
//
// The file is re-read when its mtime or size changes, checked cheaply on the
// call path; a broken file keeps the last good policy. Policy answers
// questions; it must never run a tool or write a file.
package policy
