// Package all is the single explicit list of built-in tools. Its order is
// the binding order clients see in tools/list, so keep it stable: append new
// tools at the end of their group.
package all

import (
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/devloop/persist"
	"github.com/toolhost/toolhost/internal/tools/devloop/triage"
)

// Tools returns every built-in tool, in binding order.
func Tools() []tool.Tool {
	return []tool.Tool{
		// Persistence (all agents).
		persist.WriteTodolist(),
		persist.UpdateTodoItem(),
		persist.UpdateRuntimeState(),
		persist.TimelineAppend(),
		persist.RecordMemory(),

		// Bug Triager.
		triage.ExtractEvidence(),
		triage.VerifyEvidence(),
		triage.CategoryClassifier(),
		triage.DiffContractVsImpl(),
		triage.FindSimilarBug(),
	}
}

// Registry returns a registry holding every built-in tool.
func Registry() *registry.Registry {
	r := registry.New()
	for _, t := range Tools() {
		r.Add(t)
	}
	return r
}
