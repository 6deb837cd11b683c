// Package claudecli tests toolhost against the real Claude CLI
// (@anthropic-ai/claude-code, pinned and installed into .deps/ by
// scripts/deps/40-claude-code.sh): a scripted Anthropic Messages API on
// 127.0.0.1 plays the model, and Run drives `claude -p` against it.
//
// A test scripts what the model says, runs the CLI, and checks the effect on
// disk or on the wire and what the CLI sent back to the model:
//
//	m := claudecli.NewModel(t, claudecli.Turn{
//		ToolUses: []claudecli.ToolUse{{ID: "toolu_1", Name: "mcp__toolhost__timeline_append",
//			Input: map[string]any{"kind": "x", "message": "hello"}}},
//	})
//	res := claudecli.Run(t, m, claudecli.RunOptions{
//		Dir:          project,
//		MCPConfig:    mcpConfig,             // `toolhost mcp-config …`
//		Settings:     settings,              // `toolhost mcp-config … --settings` (hooks)
//		AllowedTools: allowed,               // or PermissionMode: "bypassPermissions"
//	})
//	if res.ExitCode != 0 { t.Fatal(res) }
//	tr := m.ToolResult(t, "toolu_1")       // the tool_result the CLI sent to the model
//
// The model answers each request of the main conversation with the next
// Turn (NewModel) or with what a function decides from the request
// (NewScriptedModel: react to a tool_result); past the last turn it says
// DoneText and ends the turn. Side requests (no tools offered, or the
// haiku model: title, summary, topic checks) get SideText and consume no
// turn. It streams SSE (message_start, content_block_start/delta/stop with
// text_delta and input_json_delta, message_delta, message_stop) or answers
// JSON, serves count_tokens, and answers any other endpoint 404 with an
// error naming this package, recorded in Unknown and logged, so a CLI
// upgrade that calls something new fails clearly instead of hanging.
//
// Run gives the CLI a private HOME and config dir, a dummy API key, no
// nonessential traffic and no API retries, and strips the caller's
// ANTHROPIC_* and CLAUDE* variables; it kills the CLI's process group on
// the timeout (failing the test) and after the CLI exits. TapMCP records the
// JSON-RPC lines between the CLI and its stdio MCP servers (which revision
// the CLI asks for, what toolhost answered). Binary skips a test naming the
// install command when the CLI is missing, and fails it under CI=true.
//
// What the pinned CLI does with PreToolUse hook decisions and which MCP
// revision it settles on is written down in docs/claude-cli.md and pinned by
// the internal/e2e TestRealClaude* tests.
//
// Only _test.go files may import this package. It knows nothing of
// toolhost: it must not import toolhost's packages beyond testutil, and the
// CLI it runs must never reach a real Anthropic endpoint or account.
package claudecli
