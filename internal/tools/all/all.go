package all

import (
	"encoding/json"
	"unsafe"

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

// Tools returns every built-in tool, in binding order, with its schemas
// taken from builtinSchemas (schemas_gen.go): compact JSON ready to serve,
// so no start pays for reflecting, parsing or compacting ~40 schemas.
// TestGoldenSchemas keeps the table equal to what reflection produces.
func Tools() []tool.Tool {
	tools := build()
	for i, t := range tools {
		if i < len(builtinSchemas) && builtinSchemas[i].name == tool.NameOf(t) {
			tool.UseSchemas(t, constBytes(builtinSchemas[i].in), constBytes(builtinSchemas[i].out))
		}
	}
	return tools
}

// constBytes returns the bytes of a string constant without copying them:
// they stay in the binary's read-only data, shared by every session instead
// of copied into each one's heap. Nothing writes to a Spec's schemas (a
// write would fault).
func constBytes(s string) json.RawMessage { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// build constructs every built-in tool, in binding order.
func build() []tool.Tool {
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
	r.AddAll(append(Tools(), extraTools...))
	return r
}
