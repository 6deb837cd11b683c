// Package all is the single explicit list of built-in tools. Its order is
// the binding order clients see in tools/list, so keep it stable: append new
// tools at the end of their group.
package all

import (
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/devloop/coder"
	"github.com/toolhost/toolhost/internal/tools/devloop/docs"
	"github.com/toolhost/toolhost/internal/tools/devloop/integrator"
	"github.com/toolhost/toolhost/internal/tools/devloop/persist"
	"github.com/toolhost/toolhost/internal/tools/devloop/safety"
	"github.com/toolhost/toolhost/internal/tools/devloop/tester"
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

		// Docs (PM, Architect).
		docs.BootstrapPRDSite(),
		docs.BootstrapSDDSite(),
		docs.WriteChapter(),
		docs.WriteMVCPPage(),
		docs.ArchiveDoc(),
		docs.DiffHTML(),
		docs.DiffUnits(),
		docs.EchoDiff(),
		docs.UpdateSearchIndex(),
		docs.ValidatePRDSite(),
		docs.ValidateSDDConsistency(),
		docs.HashContract(),

		// Coder.
		coder.ContractBridge(),
		coder.AppendCoderLog(),

		// Tester.
		tester.ParseVitest(),
		tester.HintBuilder(),
		tester.BugOpen(),
		tester.BugTransition(),
		tester.BugList(),

		// Integrator.
		integrator.PortPicker(),
		integrator.SpawnUnits(),
		integrator.HealthWait(),
		integrator.RunCase(),
		integrator.ParsePlaceholder(),
		integrator.CollectStderr(),

		// Bug Triager.
		triage.ExtractEvidence(),
		triage.VerifyEvidence(),
		triage.CategoryClassifier(),
		triage.DiffContractVsImpl(),
		triage.FindSimilarBug(),

		// Safety.
		safety.Bash(),
		safety.SandboxCheck(),
	}
}

// extraTools is filled by test builds (-tags testtools) only.
var extraTools []tool.Tool

// Registry returns a registry holding every built-in tool.
func Registry() *registry.Registry {
	r := registry.New()
	for _, t := range Tools() {
		r.Add(t)
	}
	for _, t := range extraTools {
		r.Add(t)
	}
	return r
}
