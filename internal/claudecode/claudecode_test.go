package claudecode

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
)

func testProject(t *testing.T) *Project {
	t.Helper()
	set, err := agents.Parse(configs.AgentsJSON)
	if err != nil {
		t.Fatal(err)
	}
	p := &Project{Dir: "/work/proj", Bin: "/opt/bin/toolhost", Matcher: "Bash|Write"}
	for _, a := range set.List {
		p.Agents = append(p.Agents, Agent{Agent: a, Tools: []Tool{{Name: "timeline_append", Title: "Append to timeline"}}})
	}
	return p
}

// TestMergeSettings: toolhost's additions go after what is there, a
// project hook of an older toolhost binary is replaced in its place, a
// file with nothing to add is returned byte for byte, and what is not a
// settings object is refused.
func TestMergeSettings(t *testing.T) {
	t.Parallel()
	p := testProject(t)
	old := `{"hooks":{"PreToolUse":[{"matcher":"Read","hooks":[{"type":"command","command":"mine"}]},` +
		`{"matcher":"Bash","hooks":[{"type":"command","command":"/old/toolhost hook pretooluse --project-dir /work/proj --lead devloop-pm"}]}]},"z":{"a":1e3}}`
	got, err := p.MergeSettings([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if strings.Contains(s, "/old/toolhost") || strings.Count(s, "hook pretooluse") != 1 ||
		strings.Index(s, `"mine"`) > strings.Index(s, "/opt/bin/toolhost") || strings.Index(s, `"hooks"`) > strings.Index(s, `"z"`) ||
		!strings.Contains(s, `"a": 1e3`) || !strings.Contains(s, `"permissions"`) {
		t.Fatalf("merged:\n%s", s)
	}
	again, err := p.MergeSettings(got)
	if err != nil || string(again) != s {
		t.Fatalf("a second merge changed the file (%v):\n%s", err, again)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, got); err != nil {
		t.Fatal(err)
	}
	compact := buf.String()
	if same, _ := p.MergeSettings([]byte(compact)); string(same) != compact {
		t.Errorf("a file with nothing to add was rewritten")
	}
	for _, bad := range []string{`[1]`, `{"permissions": []}`, `{"hooks": {"PreToolUse": {}}}`, `{"a": `} {
		if _, err := p.MergeSettings([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestAgentFileMark: a file init renders carries its mark and reads as
// unedited; any change to it reads as edited; a file without the mark is
// not init's.
func TestAgentFileMark(t *testing.T) {
	t.Parallel()
	p := testProject(t)
	b := p.AgentFile(&p.Agents[3])
	if ours, edited := Written(b); !ours || edited {
		t.Fatalf("fresh file: ours %v edited %v", ours, edited)
	}
	for _, c := range []byte(string(b)) {
		if c > 0x7e || (c < 0x20 && c != '\n') {
			t.Fatalf("the definition is not plain ASCII: %q", c)
		}
	}
	if ours, edited := Written([]byte(strings.Replace(string(b), "Tester", "tester", 1))); !ours || !edited {
		t.Errorf("edited file: ours %v edited %v", ours, edited)
	}
	if ours, _ := Written([]byte("---\nname: x\n---\nmine\n")); ours {
		t.Error("a file without the mark reads as init's")
	}
}
