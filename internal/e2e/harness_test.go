package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/testutil"
)

// debugTools are the tools of -tags testtools builds.
var debugTools = []string{"debug_sleep", "debug_hang", "debug_panic", "debug_echo"}

// agentsFile writes configs/agents.json with the debug tools added to every
// agent's toolPolicy, and returns its path.
func agentsFile(t testing.TB) string {
	t.Helper()
	var doc map[string][]map[string]any
	if err := json.Unmarshal(configs.AgentsJSON, &doc); err != nil {
		t.Fatal(err)
	}
	for _, a := range doc["agents"] {
		cli := a["cli"].(map[string]any)
		pol := cli["toolPolicy"].([]any)
		for _, d := range debugTools {
			pol = append(pol, d)
		}
		cli["toolPolicy"] = pol
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	p := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// binary returns the test build of toolhost.
func binary(t testing.TB) string { return testutil.ToolhostWithTestTools(t) }
