package docs

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

// HashesPath is where contract hashes are recorded.
const HashesPath = "contracts/hashes.json"

// HashRecord is the recorded hash of one contract.
type HashRecord struct {
	SHA256     string    `json:"sha256"`
	RecordedAt time.Time `json:"recorded_at"`
	Agent      string    `json:"agent"`
}

// Hashes is contracts/hashes.json, keyed by the contract's project-relative
// path (encoding/json writes the keys sorted).
type Hashes map[string]HashRecord

// HashContractInput names the contract.
type HashContractInput struct {
	Path string `json:"path" jsonschema:"pattern=^contracts/[a-z0-9][a-z0-9_-]{0\\,63}\\.(json|yaml|yml)$" jsonschema_description:"project-relative path of the contract: contracts/<name>.json, .yaml or .yml (the toolhost format or OpenAPI 3.0/3.1)"`
}

// HashContractOutput is the result of hash_contract.
type HashContractOutput struct {
	tool.Status
	SHA256   string   `json:"sha256,omitempty" jsonschema_description:"hex sha256 of the contract's canonical JSON (sorted keys, no insignificant white space, numbers as written; a YAML contract as the JSON it stands for) and of every file its $refs reach"`
	Files    []string `json:"files,omitempty" jsonschema_description:"the other files the contract refers to ($refs), which the hash covers"`
	Changed  bool     `json:"changed" jsonschema_description:"true when a hash was recorded before and differs from this one"`
	Previous string   `json:"previous,omitempty" jsonschema_description:"the hash recorded before, if any"`
}

// HashContract is the hash_contract tool.
func HashContract() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "hash_contract",
		Title: "Hash API contract",
		Description: "Compute the sha256 of a contract's canonical JSON (the toolhost format or OpenAPI 3.0/3.1, JSON or YAML; reformatting does not change it, changing any field does, in the contract or in a file its $refs reach) and record it in contracts/hashes.json. " +
			"Returns the hash, the previously recorded one and whether it changed; validate_sdd_consistency reports contracts whose hash changed since it was recorded.",
		Effect:     tool.Destructive,
		Idempotent: true,
	}, hashContract)
}

func hashContract(_ context.Context, c *callctx.Ctx, in HashContractInput) (HashContractOutput, error) {
	if in.Path == HashesPath {
		return HashContractOutput{}, tool.Fail(nil, "%s is the hash record, not a contract; give contracts/<name>.json", HashesPath)
	}
	data, err := c.Files.ReadFile(in.Path)
	if notFound(err) {
		return HashContractOutput{}, tool.Fail(nil, "%s does not exist; write the contract first", in.Path)
	}
	if err != nil {
		return HashContractOutput{}, err
	}
	ct, err := contract.Load(c.Files.ReadFile, in.Path, data, contract.NameOf(in.Path))
	if err != nil {
		return HashContractOutput{}, tool.Fail(fault.Content(err), "%s is not a contract toolhost reads; fix it ({name, version, endpoints:[{id, method, path, request?, response, status}]}, or an OpenAPI 3.0/3.1 document with paths and components.schemas)", in.Path)
	}
	sum := ct.SHA256
	out := HashContractOutput{Status: tool.Status{OK: true}, SHA256: sum, Files: ct.Files}
	err = sandbox.UpdateJSON(c.Files, HashesPath, func(h *Hashes, _ bool) error {
		if *h == nil {
			*h = Hashes{}
		}
		prev, had := (*h)[in.Path]
		if had {
			out.Previous = prev.SHA256
			out.Changed = prev.SHA256 != sum
			if !out.Changed {
				return sandbox.ErrUnchanged
			}
		}
		(*h)[in.Path] = HashRecord{SHA256: sum, RecordedAt: c.Clock.Now(), Agent: c.Agent}
		return nil
	})
	if err != nil {
		return HashContractOutput{}, err
	}
	return out, nil
}
