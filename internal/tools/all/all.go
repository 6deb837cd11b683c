package all

import (
	"bytes"
	"embed"
	"encoding/json"

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
// taken from the embedded schemas/<tool>.json: reflecting ~40 schemas costs
// several milliseconds of every cold start, and TestGoldenSchemas keeps the
// embedded copies byte-equal to what reflection produces.
func Tools() []tool.Tool {
	tools := build()
	for _, t := range tools {
		if b, err := schemaFiles.ReadFile("schemas/" + tool.NameOf(t) + ".json"); err == nil {
			var f schemaFile
			if json.Unmarshal(b, &f) == nil {
				tool.UseSchemas(t, compact(f.InputSchema), compact(f.OutputSchema))
			}
		}
	}
	return tools
}

// compact removes the indentation of a schema file's JSON, giving the
// bytes reflection produces.
func compact(b json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// schemaFiles are the golden schemas, one file per built-in tool.
//
//go:embed schemas/*.json
var schemaFiles embed.FS

// schemaFile is the shape of schemas/<tool>.json.
type schemaFile struct {
	Name         string           `json:"name"`
	Description  string           `json:"description"`
	Annotations  tool.Annotations `json:"annotations"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema"`
}

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
