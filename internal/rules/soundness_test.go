package rules_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/progid"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/shellcorpus"
	"github.com/toolhost/toolhost/internal/tool"
)

// TestFactsAreSound runs every command of the shell corpus under real
// bash, with recording stubs on PATH, in a directory an agent could write,
// and judges cmd's facts by what bash really ran: no program bash ran may
// be missing from cmd unless cmd says it cannot know (an open list), and
// no program cmd shows as known may be one bash did not run (unless the
// case names it as on a path not taken). A deny and a confirm rule over
// the forbidden programs must decide whenever bash ran one; an allow rule
// over the safe ones must never lift a confirm when bash ran another;
// everyday commands stay known: the deny rule is false, the allow rule
// sure, the guard lets them run.
func TestFactsAreSound(t *testing.T) {
	bash := testutil.NeedTool(t, "bash", "", "apt-get install -y bash")
	testutil.NeedTool(t, "git", "", "apt-get install -y git")
	stubs := shellcorpus.NewStubs(t, t.TempDir(), filepath.Join(t.TempDir(), "default-calls"))
	compile := func(effect string) *rules.ToolRules {
		var rs []rules.Rule
		if err := json.Unmarshal([]byte(shellcorpus.Rules(effect, "Bash")), &rs); err != nil {
			t.Fatal(err)
		}
		set, err := rules.Compile(rs, rules.Options{Tools: rules.ClaudeTools})
		if err != nil {
			t.Fatal(err)
		}
		return set.For("Bash")
	}
	deny, confirm, allow := compile("deny"), compile("confirm"), compile("allow")
	classes := map[string]int{}
	for _, tc := range shellcorpus.Cases {
		classes[tc.Class]++
		t.Run(tc.Title(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tc.Setup(t, dir)
			command := tc.Command(stubs.Dir)
			// What toolhost decides, before the command runs.
			progs := progid.New(progid.Config{Path: stubs.Dir, Dir: dir, Writable: []string{dir}})
			o := bashguard.Options{Programs: progs}
			cmds := []tool.Command{{Script: command}}
			facts := rules.FactsJSON(cmds, o)
			in := func() *rules.Input {
				return &rules.Input{Tool: "Bash", Args: map[string]any{"command": command}, Commands: func() []tool.Command { return cmds }, Programs: progs}
			}
			dv, cv, av := deny.Decide(in()), confirm.Decide(in()), allow.Decide(in())
			guard := bashguard.CheckWith(command, o)
			// What bash does.
			ran := shellcorpus.Run(t, bash, tc, stubs, dir)
			for _, p := range shellcorpus.Judge(tc, facts, ran) {
				t.Errorf("%s\ncmd: %s", p, facts)
			}
			if p, ok := shellcorpus.RanForbidden(ran); ok {
				if dv.Effect != rules.Deny || cv.Effect != rules.Confirm {
					t.Errorf("bash ran %s, but the deny rule gave %+v and the confirm rule %+v; cmd: %s", p, dv, cv, facts)
				}
			}
			if p, ok := shellcorpus.RanUnsafe(ran); ok && av.Effect == rules.Allow {
				t.Errorf("bash ran %s, which the allow rule does not name, and the allow rule let it run: %+v; cmd: %s", p, av, facts)
			}
			if tc.Ordinary {
				if dv.Decided() || cv.Decided() || av.Effect != rules.Allow {
					t.Errorf("an everyday command: deny %+v, confirm %+v, allow %+v; cmd: %s", dv, cv, av, facts)
				}
				if guard != nil {
					t.Errorf("the guard refused an everyday command: %v", guard)
				}
			}
			switch tc.Guard {
			case "json":
				if !errors.Is(guard, bashguard.ErrInlineJSON) {
					t.Errorf("guard %v, want inline JSON refused", guard)
				}
			case "unknown":
				var ge *bashguard.Error
				if !errors.As(guard, &ge) || !errors.Is(guard, bashguard.ErrUnknowable) || !strings.Contains(guard.Error(), "Instead:") {
					t.Errorf("guard %v, want refused as unknowable with what to write instead", guard)
				}
			}
		})
	}
	for _, class := range []string{"glob", "scope", "branch", "builtin", "filter", "startup", "writable", "git", "identity"} {
		if classes[class] < 4 {
			t.Errorf("class %s has %d cases, want variants of it", class, classes[class])
		}
	}
	if classes["ordinary"] < 25 {
		t.Errorf("%d everyday commands, want at least 25", classes["ordinary"])
	}
}
