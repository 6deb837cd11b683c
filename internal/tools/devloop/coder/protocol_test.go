package coder

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// The Coder's tools through the real binary over pipes, as an agent CLI
// calls them.
func TestCoderToolsOverStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "contracts", "todo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "contracts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "contracts", "todo.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cl := testutil.Serve(t, "--project-dir", dir, "--agent", "coder")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := cl.Call(ctx, "tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"contract_bridge"`, `"append_coder_log"`} {
		if !strings.Contains(string(raw), name) {
			t.Errorf("tools/list for the coder lacks %s", name)
		}
	}
	if strings.Contains(string(raw), `"bug_open"`) {
		t.Errorf("the coder must not see bug_open")
	}

	type result struct {
		OK     bool     `json:"ok"`
		Reason string   `json:"reason"`
		Files  []string `json:"files"`
		Path   string   `json:"path"`
	}
	callTool := func(name string, args, meta map[string]any) (*stdioclient.ToolResult, result) {
		t.Helper()
		r := testutil.CallToolMeta(t, cl, name, args, meta)
		var res result
		testutil.DecodeResult(t, name, r, &res)
		return r, res
	}

	r, res := callTool("contract_bridge", map[string]any{"contract": "todo", "lang": "ts"}, map[string]any{"unit_id": "todo-be"})
	if r.IsError || !res.OK || len(res.Files) != 1 || res.Files[0] != "units/todo-be/src/todo.gen.ts" {
		t.Fatalf("contract_bridge: %s", r.Text())
	}
	got, _ := os.ReadFile(filepath.Join(dir, "units", "todo-be", "src", "todo.gen.ts"))
	want, _ := os.ReadFile(filepath.Join("testdata", "golden", "todo.ts.golden"))
	if string(got) != string(want) {
		t.Errorf("the file written over stdio differs from the golden output")
	}

	r, res = callTool("append_coder_log", map[string]any{"message": "types generated"}, nil)
	if r.IsError || res.OK || !strings.Contains(res.Reason, "no unit") {
		t.Errorf("append_coder_log without a unit: want ok:false (not isError), got %s", r.Text())
	}
	r, res = callTool("append_coder_log", map[string]any{"message": "types generated", "kind": "change"}, map[string]any{"unit_id": "todo-be", "call_id": "c-42"})
	if r.IsError || !res.OK || res.Path != "units/todo-be/coder-log.ndjson" {
		t.Fatalf("append_coder_log: %s", r.Text())
	}
	line, _ := os.ReadFile(filepath.Join(dir, "units", "todo-be", "coder-log.ndjson"))
	if !strings.Contains(string(line), `"call_id":"c-42"`) || !strings.Contains(string(line), `"unit":"todo-be"`) {
		t.Errorf("coder log line %s", line)
	}

	for _, bad := range []struct {
		args map[string]any
		says string
	}{
		{map[string]any{"contract": "todo", "lang": "rust"}, "lang"},
		{map[string]any{"contract": "../todo", "lang": "ts", "unit_id": "u"}, "contract"},
		{map[string]any{"contract": "todo", "lang": "ts", "unit_id": "../../etc"}, "unit_id"},
		{map[string]any{"contract": "todo", "lang": "ts", "unit_id": "u", "extra": 1}, "extra"},
	} {
		r, _ := callTool("contract_bridge", bad.args, nil)
		if !r.IsError || !strings.Contains(r.Text(), bad.says) {
			t.Errorf("contract_bridge %v: want isError naming %s, got %s", bad.args, bad.says, r.Text())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "units", "u")); !os.IsNotExist(err) {
		t.Errorf("a rejected call wrote into units/u")
	}
}
