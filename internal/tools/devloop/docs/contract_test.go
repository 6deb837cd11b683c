package docs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/contract"
)

func TestHashContractStableUnderReformatting(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("architect")
	hash := func(content string) HashContractOutput {
		p.write("contracts/todos.json", content)
		return mustRun[HashContractOutput](t, c, HashContract(), map[string]any{"path": "contracts/todos.json"})
	}
	first := hash(todosContract)
	want, _ := contract.Hash([]byte(todosContract))
	if first.SHA256 != want || first.Changed || first.Previous != "" {
		t.Fatalf("first hash = %+v, want %s, not changed, no previous", first, want)
	}
	same := []struct{ name, content string }{
		{"compact", strings.Join(strings.Fields(todosContract), "")},
		{"reordered keys", `{"endpoints":[{"status":200,"response":{"type":"array"},"path":"/todos","method":"GET","id":"list"}],"version":"1.0.0","name":"todos"}`},
		{"tabs and newlines", strings.ReplaceAll(todosContract, " ", "\n\t ")},
	}
	for _, tc := range same {
		if got := hash(tc.content); got.SHA256 != first.SHA256 || got.Changed || got.Previous != first.SHA256 {
			t.Errorf("%s: %+v, want the same hash, changed=false", tc.name, got)
		}
	}
	changes := []struct{ name, content string }{
		{"status", strings.Replace(todosContract, "200", "201", 1)},
		{"schema field added", strings.Replace(todosContract, `"array"}`, `"array", "maxItems": 100}`, 1)},
		{"number as written", strings.Replace(todosContract, `"array"}`, `"array", "maxItems": 1e2}`, 1)},
		{"path", strings.Replace(todosContract, "/todos", "/todo", 1)},
	}
	prev := first.SHA256
	for _, tc := range changes {
		got := hash(tc.content)
		if got.SHA256 == prev || !got.Changed || got.Previous != prev {
			t.Errorf("%s: %+v, want a new hash, changed=true, previous=%s", tc.name, got, prev)
		}
		prev = got.SHA256
	}
	var h Hashes
	raw := p.read(HashesPath)
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatal(err)
	}
	if rec := h["contracts/todos.json"]; rec.SHA256 != prev || rec.Agent != "architect" || rec.RecordedAt.IsZero() {
		t.Fatalf("hashes.json = %s", raw)
	}
	if !strings.HasSuffix(raw, "}\n") || !strings.Contains(raw, "\n  \"contracts/todos.json\"") {
		t.Error("hashes.json is not pretty-printed with a trailing newline")
	}
}

func TestHashContractRefusals(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.ctx("architect")
	p.write("contracts/bad.json", `{"name": "bad", "endpoints": [{"id": "x", "method": "GET"}]}`)
	p.write("contracts/notjson.json", `{"name": `)
	cases := []struct{ path, want string }{
		{"contracts/missing.json", "does not exist"},
		{"contracts/bad.json", "needs id, method and path"},
		{"contracts/notjson.json", "not valid JSON"},
		{"contracts/hashes.json", "is the hash record"},
	}
	for _, tc := range cases {
		_, r, err := run[HashContractOutput](t, c, HashContract(), map[string]any{"path": tc.path})
		if err != nil || !r.Failed || !strings.Contains(r.Reason, tc.want) {
			t.Errorf("%s: err=%v reason=%q, want ok:false containing %q", tc.path, err, r.Reason, tc.want)
		}
	}
	// The PM may read contracts but not record hashes.
	p.write("contracts/todos.json", todosContract)
	if _, _, err := run[HashContractOutput](t, p.ctx("pm"), HashContract(), map[string]any{"path": "contracts/todos.json"}); err == nil || !strings.Contains(err.Error(), "Sandbox violation") {
		t.Errorf("pm hash_contract: err = %v, want a sandbox violation", err)
	}
}
