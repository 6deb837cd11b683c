package agents

import (
	"encoding/json"
	"strings"
	"testing"
)

func sandboxDoc(sandbox string) []byte {
	return []byte(`{"agents":[{"name":"devloop-x","short":"x","cli":{"toolPolicy":["Bash"]},"sandbox":` + sandbox + `}]}`)
}

// TestSandboxSettings: commands and network are checked and defaulted at
// load, so the rest of toolhost only ever sees complete rules.
func TestSandboxSettings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, sandbox, err    string
		commands              string
		connect, bind, unitBy string
	}{
		{name: "defaults", sandbox: `{"cwd":".","writeAllowList":["a/**"]}`, commands: "require", connect: "any", bind: "any", unitBy: "own"},
		{name: "lists", sandbox: `{"cwd":".","writeAllowList":[],"commands":"best-effort","network":{"connect":[443,80],"bind":[],"unitBind":"any"}}`,
			commands: "best-effort", connect: "443,80", bind: "none", unitBy: "any"},
		{name: "unknown mode", sandbox: `{"cwd":".","writeAllowList":[],"commands":"sometimes"}`, err: `sandbox.commands "sometimes" must be`},
		{name: "own outside unitBind", sandbox: `{"cwd":".","writeAllowList":[],"network":{"bind":"own"}}`, err: `"own" is only for unitBind`},
		{name: "not a port", sandbox: `{"cwd":".","writeAllowList":[],"network":{"connect":[70000]}}`, err: "70000 is not a TCP port"},
		{name: "not a rule", sandbox: `{"cwd":".","writeAllowList":[],"network":{"connect":"some"}}`, err: `port rule "some"`},
		{name: "bad read pattern", sandbox: `{"cwd":".","writeAllowList":[],"readAllowList":["[x"]}`, err: "readAllowList pattern"},
		{name: "env names and patterns", sandbox: `{"cwd":".","writeAllowList":[],"env":["NODE_*","GITHUB_TOKEN"],"network":{"reachToolhost":true}}`,
			commands: "require", connect: "any", bind: "any", unitBy: "own"},
		{name: "env with a value", sandbox: `{"cwd":".","writeAllowList":[],"env":["A=B"]}`, err: `sandbox.env "A=B"`},
		{name: "env bad pattern", sandbox: `{"cwd":".","writeAllowList":[],"env":["[x"]}`, err: `sandbox.env "[x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set, err := Parse(sandboxDoc(tc.sandbox))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := set.List[0].Sandbox
			if s.Commands != tc.commands || s.Network.Connect.String() != tc.connect || s.Network.Bind.String() != tc.bind || s.Network.UnitBind.String() != tc.unitBy {
				t.Fatalf("sandbox %+v, want commands %s connect %s bind %s unitBind %s", s, tc.commands, tc.connect, tc.bind, tc.unitBy)
			}
			// What is loaded is written back the same way.
			b, _ := json.Marshal(s.Network)
			var again Network
			if err := json.Unmarshal(b, &again); err != nil || again.Connect.String() != tc.connect || again.UnitBind.String() != tc.unitBy {
				t.Fatalf("round trip %s: %+v, %v", b, again, err)
			}
		})
	}
}
