package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/rules"
)

// Change is one difference between two policy files, as `toolhost policy
// check` prints it.
type Change struct {
	// Op is "+" (added), "-" (removed), "~" (changed) or "!" (a warning
	// about the new file).
	Op   string `json:"op"`
	What string `json:"what"`
	Name string `json:"name"`
	// Detail says what changed, e.g. "permission read → write".
	Detail string `json:"detail"`
}

func (c Change) String() string {
	return fmt.Sprintf("%s %s %s: %s", c.Op, c.What, c.Name, c.Detail)
}

// Diff lists what replacing cur with next would change, tools first (sorted
// by name), then upstream servers and settings, then warnings about next.
func Diff(cur, next *File) []Change {
	var out []Change
	for _, name := range unionKeys(cur.Tools, next.Tools) {
		a, inA := cur.Tools[name]
		b, inB := next.Tools[name]
		switch {
		case !inA:
			out = append(out, Change{Op: "+", What: "tool", Name: name, Detail: describe(b)})
		case !inB:
			out = append(out, Change{Op: "-", What: "tool", Name: name, Detail: "was " + describe(a) + "; a built-in tool falls back to its declared default, an upstream tool is denied"})
		case a != b:
			out = append(out, Change{Op: "~", What: "tool", Name: name, Detail: ruleDiff(a, b)})
		}
	}
	ups := func(f *File) map[string]Upstream {
		m := map[string]Upstream{}
		for _, u := range f.Upstream {
			m[u.Name] = u
		}
		return m
	}
	ua, ub := ups(cur), ups(next)
	for _, name := range unionKeys(ua, ub) {
		a, inA := ua[name]
		b, inB := ub[name]
		switch {
		case !inA:
			out = append(out, Change{Op: "+", What: "upstream", Name: name, Detail: b.Transport + " " + b.Command + b.URL})
		case !inB:
			out = append(out, Change{Op: "-", What: "upstream", Name: name, Detail: a.Transport + " " + a.Command + a.URL})
		case fmt.Sprint(a) != fmt.Sprint(b):
			out = append(out, Change{Op: "~", What: "upstream", Name: name, Detail: "settings changed"})
		}
	}
	if !slices.Equal(cur.EnvAllowList, next.EnvAllowList) {
		out = append(out, Change{Op: "~", What: "setting", Name: "env_allowlist",
			Detail: fmt.Sprintf("[%s] → [%s]", strings.Join(cur.EnvAllowList, ", "), strings.Join(next.EnvAllowList, ", "))})
	}
	if cur.ConfirmTTL() != next.ConfirmTTL() {
		out = append(out, Change{Op: "~", What: "setting", Name: "confirm_ttl_ms",
			Detail: fmt.Sprintf("%d → %d", cur.ConfirmTTL().Milliseconds(), next.ConfirmTTL().Milliseconds())})
	}
	out = append(out, rulesDiff(cur.Rules, next.Rules)...)
	return append(out, Warnings(next)...)
}

// rulesDiff lists rules added, removed and changed (by id), and a change
// of order among the rules both keep: the first matching rule decides, so
// order is part of the policy.
func rulesDiff(cur, next []rules.Rule) []Change {
	var out []Change
	byID := func(rs []rules.Rule) map[string]rules.Rule {
		m := map[string]rules.Rule{}
		for _, r := range rs {
			m[r.ID] = r
		}
		return m
	}
	a, b := byID(cur), byID(next)
	for _, r := range next {
		old, ok := a[r.ID]
		switch {
		case !ok:
			out = append(out, Change{Op: "+", What: "rule", Name: r.ID, Detail: describeRule(r)})
		case old != r:
			out = append(out, Change{Op: "~", What: "rule", Name: r.ID, Detail: ruleChange(old, r)})
		}
	}
	for _, r := range cur {
		if _, ok := b[r.ID]; !ok {
			out = append(out, Change{Op: "-", What: "rule", Name: r.ID, Detail: "was " + describeRule(r)})
		}
	}
	kept := func(rs []rules.Rule, other map[string]rules.Rule) []string {
		var ids []string
		for _, r := range rs {
			if _, ok := other[r.ID]; ok {
				ids = append(ids, r.ID)
			}
		}
		return ids
	}
	if x, y := kept(cur, b), kept(next, a); !slices.Equal(x, y) {
		out = append(out, Change{Op: "~", What: "setting", Name: "rules order",
			Detail: strings.Join(x, ", ") + " → " + strings.Join(y, ", ") + " (the first matching rule decides)"})
	}
	return out
}

func describeRule(r rules.Rule) string {
	when := r.When
	if when == "" {
		when = "(always)"
	}
	return fmt.Sprintf("%s %s when %s", r.Effect, r.Tool, when)
}

func ruleChange(a, b rules.Rule) string {
	var parts []string
	if a.Tool != b.Tool {
		parts = append(parts, fmt.Sprintf("tool %s → %s", a.Tool, b.Tool))
	}
	if a.When != b.When {
		parts = append(parts, fmt.Sprintf("when %s → %s", a.When, b.When))
	}
	if a.Effect != b.Effect {
		parts = append(parts, fmt.Sprintf("effect %s → %s", a.Effect, b.Effect))
	}
	if a.Reason != b.Reason {
		parts = append(parts, "reason changed")
	}
	return strings.Join(parts, "; ")
}

// Warnings points at entries of f that parse but will not do what they seem
// to: unknown permissions (denied), retries on non-read tools (ignored),
// and rules naming a tool that is no built-in (rules.Set.Warnings).
func Warnings(f *File) []Change {
	var out []Change
	names := slices.Sorted(maps.Keys(f.Tools))
	for _, n := range names {
		r := f.Tools[n]
		switch {
		case r.Permission != Read && r.Permission != Write && r.Permission != Deny:
			out = append(out, Change{Op: "!", What: "tool", Name: n,
				Detail: fmt.Sprintf("permission %q is not read, write or deny, so the tool is denied", r.Permission)})
		case r.Permission != Read && r.MaxRetries > 0:
			out = append(out, Change{Op: "!", What: "tool", Name: n,
				Detail: fmt.Sprintf("max_retries %d is ignored: only read tools are retried", r.MaxRetries)})
		}
	}
	for _, p := range f.RuleSet().Warnings() {
		out = append(out, Change{Op: "!", What: "rule", Name: p.ID, Detail: p.Msg})
	}
	return out
}

func describe(r Rule) string {
	return fmt.Sprintf("permission %s, timeout_ms %d, max_retries %d, confirm %t", r.Permission, r.TimeoutMS, r.MaxRetries, r.Confirm)
}

func ruleDiff(a, b Rule) string {
	var parts []string
	if a.Permission != b.Permission {
		parts = append(parts, fmt.Sprintf("permission %s → %s", a.Permission, b.Permission))
	}
	if a.TimeoutMS != b.TimeoutMS {
		parts = append(parts, fmt.Sprintf("timeout_ms %d → %d", a.TimeoutMS, b.TimeoutMS))
	}
	if a.MaxRetries != b.MaxRetries {
		parts = append(parts, fmt.Sprintf("max_retries %d → %d", a.MaxRetries, b.MaxRetries))
	}
	if a.Confirm != b.Confirm {
		parts = append(parts, fmt.Sprintf("confirm %t → %t", a.Confirm, b.Confirm))
	}
	return strings.Join(parts, "; ")
}

// unionKeys returns the keys of a and b, sorted, each once.
func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(keys)
	return slices.Compact(keys)
}
