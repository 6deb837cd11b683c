package coder

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/tool"
)

// ContractBridgeInput names the contract and the language to generate.
type ContractBridgeInput struct {
	Contract string `json:"contract" jsonschema:"pattern=^[a-z0-9][a-z0-9_-]{0\\,63}$" jsonschema_description:"contract name: reads contracts/<contract>.json, .yaml or .yml (the toolhost format or OpenAPI 3.0/3.1)"`
	UnitID   string `json:"unit_id,omitempty" jsonschema:"pattern=^[A-Za-z0-9_][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"unit to generate into (units/<unit_id>/src/); defaults to the session's unit"`
	Lang     string `json:"lang" jsonschema:"enum=ts,enum=go" jsonschema_description:"ts writes src/<contract>.gen.ts (interfaces, METHOD/PATH/STATUS constants, typed path params); go writes src/<contract>_gen.go (structs with json tags, Method/Path/Status constants); each contract has its own file"`
	Package  string `json:"package,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_]{0\\,63}$" jsonschema_description:"Go package name of the generated file (lang go only; default contract)"`
}

// ContractBridgeOutput is the result of contract_bridge.
type ContractBridgeOutput struct {
	tool.Status
	Files   []string `json:"files,omitempty" jsonschema_description:"project-relative paths of the generated files"`
	SHA256  string   `json:"sha256,omitempty" jsonschema_description:"canonical sha256 of the contract (the same hash_contract records), also in the file header"`
	Changed bool     `json:"changed" jsonschema_description:"false when the file already held exactly this output"`
	Types   int      `json:"types,omitempty" jsonschema_description:"number of generated types"`
	Routes  int      `json:"routes,omitempty" jsonschema_description:"number of endpoints with route constants"`
}

// ContractBridge is the contract_bridge tool.
func ContractBridge() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "contract_bridge",
		Title:       "Generate contract types",
		Description: "Generate types and route constants from contracts/<contract>.json|.yaml (the toolhost format, or OpenAPI 3.0/3.1: types from components.schemas, routes from paths) into the unit: lang ts -> units/<unit>/src/<contract>.gen.ts, lang go -> units/<unit>/src/<contract>_gen.go. Covers every request/response schema (objects, arrays, enums, nullable, nested, $ref to #/definitions, #/$defs or #/components/schemas), METHOD/PATH/STATUS per endpoint and typed path parameters (/todos/:id or /todos/{id}). The header carries the contract's sha256; the same contract always gives the same bytes.",
		Effect:      tool.Destructive,
		Idempotent:  true,
		Timeout:     30 * time.Second,
	}, contractBridge)
}

func contractBridge(_ context.Context, c *callctx.Ctx, in ContractBridgeInput) (ContractBridgeOutput, error) {
	unit := in.UnitID
	if unit == "" {
		unit = c.UnitID
	}
	if unit == "" {
		return ContractBridgeOutput{}, tool.Fail(nil, "no unit: pass unit_id, or start the session with --unit (or _meta.unit_id) so the files go to units/<unit>/src/")
	}
	if in.Package != "" && in.Lang != "go" {
		return ContractBridgeOutput{}, &tool.ValidationError{Field: "package", Reason: "package applies to lang go only; drop it for lang ts"}
	}
	src, raw, err := contract.Locate(c.Files.ReadFile, in.Contract)
	if errors.Is(err, fs.ErrNotExist) {
		return ContractBridgeOutput{}, tool.Fail(nil, "no contract %s (contracts/%s.json, .yaml or .yml); %s", in.Contract, in.Contract, available(c.Files))
	}
	if err != nil {
		return ContractBridgeOutput{}, tool.Fail(err, "contract %s cannot be read", in.Contract)
	}
	ct, err := contract.Load(c.Files.ReadFile, src, raw, in.Contract)
	if err != nil {
		return ContractBridgeOutput{}, tool.Fail(fault.Content(err), "%s", src)
	}
	m, err := buildModel(ct, ct.SHA256, src, in.Lang == "go")
	if err != nil {
		return ContractBridgeOutput{}, tool.Fail(fault.Content(err), "%s", src)
	}
	var out []byte
	// Each contract its own file, so a second contract never replaces the
	// first one's output.
	dst := "units/" + unit + "/src/" + in.Contract + ".gen.ts"
	if in.Lang == "go" {
		dst = "units/" + unit + "/src/" + in.Contract + "_gen.go"
		pkg := in.Package
		if pkg == "" {
			pkg = "contract"
		}
		out, err = generateGo(m, pkg)
	} else {
		out, err = generateTS(m)
	}
	var clash *ErrNameClash
	if errors.As(err, &clash) {
		return ContractBridgeOutput{}, tool.Fail(fault.Content(err), "%s", src)
	}
	if err != nil {
		return ContractBridgeOutput{}, err
	}
	old, err := c.Files.ReadFile(dst)
	changed := err != nil || !bytes.Equal(old, out)
	if changed {
		if err := c.Files.WriteFile(dst, out); err != nil {
			return ContractBridgeOutput{}, err
		}
	}
	return ContractBridgeOutput{
		Status: tool.Status{OK: true}, Files: []string{dst}, SHA256: m.sha256, Changed: changed,
		Types: len(m.types), Routes: len(m.routes),
	}, nil
}

// available lists the contracts there are, for the "no such contract" reason.
func available(files callctx.Files) string {
	ents, err := files.ReadDir(contract.Dir)
	var names []string
	for _, e := range ents {
		if n := contract.NameOf(contract.Dir + "/" + e.Name()); n != "" && !e.IsDir() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if err != nil || len(names) == 0 {
		return "there are no contracts yet (the architect writes contracts/<name>.json or .yaml)"
	}
	return "available: " + strings.Join(names, ", ")
}
