// Package all is the single explicit list of built-in tools. Its order is
// the binding order clients see in tools/list, so keep it stable: append new
// tools at the end of their group.
//
// It must never hold a tool of its own; tools live in internal/tools/devloop.
package all
