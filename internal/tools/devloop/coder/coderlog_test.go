package coder

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAppendCoderLog(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "todo-be")
	for _, args := range []map[string]any{
		{"message": "generated contract types", "kind": "change", "files": []string{"units/todo-be/src/contract.gen.ts"}},
		{"message": "chose express over fastify"},
	} {
		out, err := call[AppendCoderLogOutput](t, c, AppendCoderLog(), args)
		if err != nil || !out.OK || out.Path != "units/todo-be/coder-log.ndjson" {
			t.Fatalf("append_coder_log: %v %+v", err, out)
		}
	}
	raw, err := os.ReadFile(filepath.Join(c.ProjectDir, "units", "todo-be", "coder-log.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", raw)
	}
	var e0, e1 CoderLogEntry
	if json.Unmarshal([]byte(lines[0]), &e0) != nil || json.Unmarshal([]byte(lines[1]), &e1) != nil {
		t.Fatalf("lines are not JSON: %q", raw)
	}
	if e0.Kind != "change" || e0.Unit != "todo-be" || e0.CallID != "call-1" || e0.TS.IsZero() || len(e0.Files) != 1 || e0.Message != "generated contract types" {
		t.Errorf("first entry %+v", e0)
	}
	if e1.Kind != "note" || e1.Files == nil || !strings.Contains(lines[1], `"files":[]`) {
		t.Errorf("second entry %s: want kind note and files []", lines[1])
	}
}

func TestAppendCoderLogRefusals(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "")
	out, err := call[AppendCoderLogOutput](t, c, AppendCoderLog(), map[string]any{"message": "x"})
	if err != nil || out.OK || !strings.Contains(out.Reason, "--unit") || !strings.Contains(out.Reason, "_meta.unit_id") {
		t.Errorf("no unit: want ok:false naming --unit and _meta.unit_id, got %v %+v", err, out)
	}
	c = newCtx(t, "u")
	for _, f := range []string{"../etc/passwd", "/etc/passwd", "units/../../x", ""} {
		_, err := call[AppendCoderLogOutput](t, c, AppendCoderLog(), map[string]any{"message": "x", "files": []string{"ok.ts", f}})
		if err == nil || !strings.Contains(err.Error(), "files[1]") {
			t.Errorf("files %q: want a rejection naming files[1], got %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.ProjectDir, "units")); !os.IsNotExist(err) {
		t.Errorf("refused calls must write nothing")
	}
}
