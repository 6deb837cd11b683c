package policy_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/tool"
)

func TestAccess(t *testing.T) {
	t.Parallel()
	f, err := policy.Parse([]byte(`{"tools":{
		"listed_read":  {"permission":"read","timeout_ms":1500},
		"listed_deny":  {"permission":"deny"},
		"odd":          {"permission":"admin"},
		"gh__search":   {"permission":"read"}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	ag := &agents.Agent{Name: "devloop-coder"}
	ag.CLI.ToolPolicy = []string{"listed_read", "listed_deny", "odd", "unlisted_write", "gh__*", "Bash"}
	builtin := func(name string, e tool.Effect) *tool.Spec {
		return &tool.Spec{Name: name, Effect: e, Source: "builtin"}
	}
	upstream := func(name string) *tool.Spec { return &tool.Spec{Name: name, Source: "mcp:gh"} }
	withheld := func(name string, k fault.Kind, why string) *tool.Spec {
		s := upstream(name)
		s.Withheld = &tool.Withheld{Kind: k, Reason: why}
		return s
	}
	cases := []struct {
		name       string
		spec       *tool.Spec
		permission string
		reason     string
	}{
		{"listed read", builtin("listed_read", tool.ReadOnly), policy.Read, ""},
		{"unlisted built-in takes its effect's default", builtin("unlisted_write", tool.Additive), policy.Write, ""},
		{"upstream tool listed and matched by a glob", upstream("gh__search"), policy.Read, ""},
		{"not in the agent's toolPolicy", builtin("bootstrap_prd_site", tool.Additive), policy.Write,
			"tool bootstrap_prd_site is not allowed for agent devloop-coder"},
		{"toolPolicy first, even when the file denies too", upstream("other__x"), policy.Deny,
			"tool other__x is not allowed for agent devloop-coder"},
		{"denied by the file", builtin("listed_deny", tool.ReadOnly), policy.Deny,
			`tool listed_deny is denied by the tool policy (permission "deny")`},
		{"permission the file does not know", builtin("odd", tool.ReadOnly), policy.Deny,
			`tool odd has permission "admin" in the tool policy, which is not read, write or deny, so it is denied`},
		{"upstream tool the file does not list", upstream("gh__delete_repo"), policy.Deny,
			"tool gh__delete_repo is not listed in the tool policy, so it is denied"},
		{"withheld by its pin", withheld("gh__search", fault.Pin, "changed since pinned"), policy.Read, "changed since pinned"},
		{"withheld while its server restarts", withheld("gh__search", fault.Unavailable, "restarting"), policy.Read, "restarting"},
		{"the policy's refusal comes before a withhold", withheld("gh__delete_repo", fault.Pin, "changed"), policy.Deny,
			"tool gh__delete_repo is not listed in the tool policy, so it is denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := f.Access(ag, tc.spec)
			if a.Reason != tc.reason || a.Visible() != (tc.reason == "") || a.Permission != tc.permission {
				t.Fatalf("Access(%s) = %+v; want permission %s, reason %q", tc.spec.Name, a, tc.permission, tc.reason)
			}
			wantKind := fault.None
			switch {
			case tc.reason == "":
			case tc.spec.Withheld != nil && a.Decision.Allowed():
				wantKind = tc.spec.Withheld.Kind
			default:
				wantKind = fault.Policy
			}
			if a.Kind != wantKind {
				t.Fatalf("Access(%s).Kind = %v, want %v", tc.spec.Name, a.Kind, wantKind)
			}
			if a.Decision != f.Decide(tc.spec) {
				t.Fatalf("Access carries %+v, Decide says %+v", a.Decision, f.Decide(tc.spec))
			}
		})
	}
}

func TestParseUpstreamHealthAndPin(t *testing.T) {
	t.Parallel()
	ok := `{"tools":{},"upstream":[{"name":"gh","transport":"stdio","command":"gh-mcp","pin":"trust-new","max_failures":3,"ping_interval_ms":5000}]}`
	f, err := policy.Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if u := f.Upstream[0]; u.Pin != policy.PinTrustNew || u.MaxFailures != 3 || u.PingIntervalMS != 5000 {
		t.Fatalf("parsed %+v", u)
	}
	for bad, want := range map[string]string{
		`"pin":"trust-all"`:     `pin must be "strict" or "trust-new", not "trust-all"`,
		`"max_failures":-1`:     "must not be negative",
		`"ping_interval_ms":-5`: "must not be negative",
	} {
		_, err := policy.Parse([]byte(`{"tools":{},"upstream":[{"name":"gh","transport":"stdio","command":"gh-mcp",` + bad + `}]}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}

// TestOffered: the tools an agent is offered keep their order; the ones its
// toolPolicy names but the file hides come with Access's reason; the ones
// it does not name are in neither list.
func TestOffered(t *testing.T) {
	t.Parallel()
	f, err := policy.Parse([]byte(`{"tools":{"a":{"permission":"read"},"b":{"permission":"deny"},"c":{"permission":"write"},"d":{"permission":"read"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ag := &agents.Agent{Name: "devloop-coder"}
	ag.CLI.ToolPolicy = []string{"c", "a", "b"}
	var specs []*tool.Spec
	for _, n := range []string{"a", "b", "c", "d"} {
		specs = append(specs, &tool.Spec{Name: n, Source: "builtin"})
	}
	offered, hidden := f.Offered(ag, specs)
	var names []string
	for _, s := range offered {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "a,c" || len(hidden) != 1 || hidden[0].Name != "b" || hidden[0].Reason != f.Access(ag, specs[1]).Reason {
		t.Fatalf("offered %v, hidden %+v", names, hidden)
	}
}
