//go:build bench_no_rules

package rules

import (
	"encoding/json"
	"errors"

	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/tool"
)

// A build with -tags bench_no_rules (BenchmarkStartCost's A/B builds only)
// has no CEL: a policy without rules works as in every build, one with
// rules does not load.

// Set is the empty rule set.
type Set struct{}

// ToolRules is never returned: no rule applies to any tool.
type ToolRules struct{}

// Compile accepts no rules.
func Compile(rs []Rule, _ Options) (*Set, error) {
	if len(rs) > 0 {
		return nil, errors.New("built without the rules engine (-tags bench_no_rules)")
	}
	return &Set{}, nil
}

// Warnings are none.
func (*Set) Warnings() []Problem { return nil }

// For returns nil: no rule applies.
func (*Set) For(string) *ToolRules { return nil }

// Decide decides nothing.
func (*ToolRules) Decide(*Input) Verdict { return Verdict{} }

// Explain explains nothing.
func (*ToolRules) Explain(*Input) (Verdict, []Step) { return Verdict{}, nil }

// FactsJSON has no facts to give.
func FactsJSON([]tool.Command, bashguard.Options) json.RawMessage { return json.RawMessage("{}") }
