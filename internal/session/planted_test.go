package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/session"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/all"
)

// plantedText is in every planted error: no byte of it may reach the wire.
const plantedText = "PLANTED-SECRET"

// TestPlantedErrorsNeverReachTheWire walks every built-in tool's failure
// paths: each tool is called again and again, the k-th operation on the
// sandbox doors (the agent's and the services') failing in the k-th call
// with an internal error whose text names a path outside the project and
// a password, until a call makes fewer than k operations. Whatever the tool
// makes of the failure (an error, an ok:false reason, a result field), the
// JSON-RPC answer the client receives never holds the planted text; the log
// does, under an error id.
func TestPlantedErrorsNeverReachTheWire(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyTree(t, filepath.Join("..", "tools", "devloop", "triage", "testdata", "project"), dir)
	agentsFile := filepath.Join(t.TempDir(), "agents.json")
	writeAllToolsAgent(t, agentsFile)
	unit := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":1}`))
	}))
	defer unit.Close()

	var log testutil.SyncBuffer
	s, err := session.Open(session.Options{
		Identity:   callctx.Identity{Agent: "all", ProjectDir: dir, UnitID: "todo-be"},
		AgentsFile: agentsFile, Version: "test", Log: zerolog.New(&log),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plant := &planter{}
	files, shared := &plantedDoor{Sandbox: s.Files, p: plant}, &plantedDoor{Sandbox: s.Shared, p: plant}
	svc := &s.Engine.Services
	svc.Files, svc.Shared = files, shared
	// The project's store writes through a planted door too.
	fst, err := filestore.Open(dir, filestore.Options{WrapDoor: func(sb *sandbox.Sandbox) filestore.Door {
		return &plantedDoor{Sandbox: sb, p: plant}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	svc.Timeline, svc.Events, svc.Bugs, svc.Agents = fst.Timeline(), fst.Events(), fst.Bugs(), fst.Agents()

	call := func(name string, args string) string {
		params := fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args)
		res, err := s.Server.Handle(context.Background(), &peer{}, rpc.Request{ID: json.RawMessage("1"), Method: "tools/call", Params: json.RawMessage(params)})
		if err != nil {
			return err.Error()
		}
		b, rerr := rpc.EncodeResult(json.RawMessage("1"), res)
		if rerr != nil {
			t.Fatalf("%s: encode: %v", name, rerr)
		}
		return string(b)
	}
	// State the later calls build on, made without plants.
	for _, c := range []struct{ name, args string }{
		{"write_todolist", `{"items":[{"id":"step-001","description":"one"},{"id":"step-002","description":"two"}]}`},
		{"bootstrap_prd_site", `{"title":"P","chapters":[{"id":"goals","title":"Goals"}]}`},
		{"bootstrap_sdd_site", `{"title":"S","chapters":[{"id":"api","title":"API"}]}`},
		{"write_chapter", `{"site":"prd","chapter_id":"goals","html":"<p>one</p>"}`},
		{"write_chapter", `{"site":"prd","chapter_id":"goals","html":"<p>two</p>"}`},
		{"hash_contract", `{"path":"contracts/todos.json"}`},
	} {
		if out := call(c.name, c.args); strings.Contains(out, `"isError":true`) || strings.Contains(out, `"ok":false`) {
			t.Fatalf("setup %s: %s", c.name, out)
		}
	}
	caseArgs := fmt.Sprintf(`{"case":{"id":"c1","steps":[{"method":"GET","url":%q,"expect":{"status":200},"capture":{"id":"/id"}}]}}`, unit.URL+"/items")
	calls := map[string]string{
		"write_todolist":           `{"items":[{"id":"step-001","description":"one"}]}`,
		"update_todo_item":         `{"id":"step-001","status":"doing","note":"n"}`,
		"update_runtime_state":     `{"phase":"p","status":"s","message":"m"}`,
		"timeline_append":          `{"kind":"k.x","message":"m"}`,
		"record_memory":            `{"key":"k","content":"c","tags":["t"]}`,
		"bootstrap_prd_site":       `{"title":"P","chapters":[{"id":"goals","title":"Goals"}],"overwrite":true}`,
		"bootstrap_sdd_site":       `{"title":"S","chapters":[{"id":"api","title":"API"}],"overwrite":true}`,
		"write_chapter":            `{"site":"prd","chapter_id":"goals","html":"<p>three</p>"}`,
		"write_mvcp_page":          `{"name":"home","title":"Home","html":"<p>hi</p>"}`,
		"archive_doc":              `{"path":"prd/goals.html"}`,
		"diff_html":                `{"path":"prd/goals.html"}`,
		"diff_units":               `{"path":"prd/goals.html"}`,
		"echo_diff":                `{"path":"prd/goals.html"}`,
		"update_search_index":      `{"site":"prd"}`,
		"validate_prd_site":        `{}`,
		"validate_sdd_consistency": `{}`,
		"hash_contract":            `{"path":"contracts/todos.json"}`,
		"contract_bridge":          `{"contract":"todos","lang":"ts"}`,
		"append_coder_log":         `{"message":"m","files":["units/todo-be/src/todos.js"]}`,
		"parse_vitest":             `{"report_path":"reports/vitest-2.json"}`,
		"hint_builder":             `{"report_path":"reports/vitest-2.json"}`,
		"bug_open":                 `{"title":"it breaks","severity":"minor","unit_id":"todo-be","evidence":{"test_file":"tests/todos.test.js"}}`,
		"bug_transition":           `{"id":"BUG-0003","to":"triaged","note":"n"}`,
		"bug_list":                 `{}`,
		"port_picker":              `{"units":["todo-be"]}`,
		"spawn_units":              `{"action":"status"}`,
		"health_wait":              fmt.Sprintf(`{"targets":[{"url":%q}],"timeout_ms":2000}`, unit.URL),
		"run_case":                 caseArgs,
		"parse_placeholder":        `{"text":"http://127.0.0.1:{{port:todo-be}}/"}`,
		"collect_stderr":           `{"units":["todo-be"]}`,
		"extract_evidence":         `{"bug_id":"BUG-0002"}`,
		"verify_evidence":          `{"bug_id":"BUG-0001"}`,
		"category_classifier":      `{"bug_id":"BUG-0001"}`,
		"diff_contract_vs_impl":    `{"contract":"todos","unit_id":"todo-be"}`,
		"find_similar_bug":         `{"bug_id":"BUG-0001"}`,
		"bash":                     `{"command":"true"}`,
		"sandbox_check":            `{"path":"units/todo-be/x.js","op":"write"}`,
	}
	fired := 0
	for _, tl := range all.Tools() {
		name := tool.NameOf(tl)
		args, ok := calls[name]
		if !ok {
			t.Errorf("%s: no arguments to walk its failure paths with; add it to calls", name)
			continue
		}
		before := fired
		for k := int32(1); ; k++ {
			plant.arm(k)
			out := call(name, args)
			if strings.Contains(out, plantedText) || strings.Contains(out, "hunter2") {
				t.Errorf("%s with operation %d failing: the planted text reached the wire: %s", name, k, out)
			}
			if plant.done() < k {
				break
			}
			fired++
		}
		t.Logf("%s: %d planted failures", name, fired-before)
	}
	plant.arm(0)
	if fired < len(calls) {
		t.Fatalf("only %d planted failures fired for %d tools: the walk does not reach the doors", fired, len(calls))
	}
	if !strings.Contains(log.String(), plantedText) || !strings.Contains(log.String(), `"error_id"`) {
		t.Fatalf("the log does not keep the planted errors under an error id")
	}
}

// planter fails the at-th door operation of a call (0: none).
type planter struct{ at, n atomic.Int32 }

func (p *planter) arm(at int32) { p.at.Store(at); p.n.Store(0) }

// done is how many operations the call made, at most the armed one.
func (p *planter) done() int32 { return min(p.n.Load(), max(p.at.Load(), 1)) }

func (p *planter) fail(op, rel string) error {
	n := p.n.Add(1)
	if n != p.at.Load() {
		return nil
	}
	// An OS error with an absolute path outside the project, and another
	// error's own text, both around the planted secret.
	if n%2 == 0 {
		return fmt.Errorf("%s password=hunter2: %w", plantedText, &fs.PathError{Op: op, Path: "/var/lib/" + plantedText + "/" + rel, Err: syscall.EIO})
	}
	return fmt.Errorf("%s: %s %s: password=hunter2", plantedText, op, rel)
}

// plantedDoor is a sandbox whose operations fail when the planter says so.
type plantedDoor struct {
	*sandbox.Sandbox
	p *planter
}

func (d *plantedDoor) ReadFile(rel string) ([]byte, error) {
	if err := d.p.fail("read", rel); err != nil {
		return nil, err
	}
	return d.Sandbox.ReadFile(rel)
}

func (d *plantedDoor) ReadDir(rel string) ([]fs.DirEntry, error) {
	if err := d.p.fail("readdir", rel); err != nil {
		return nil, err
	}
	return d.Sandbox.ReadDir(rel)
}

func (d *plantedDoor) Stat(rel string) (fs.FileInfo, error) {
	if err := d.p.fail("stat", rel); err != nil {
		return nil, err
	}
	return d.Sandbox.Stat(rel)
}

func (d *plantedDoor) Walk(rel string, fn fs.WalkDirFunc) error {
	if err := d.p.fail("walk", rel); err != nil {
		return err
	}
	return d.Sandbox.Walk(rel, fn)
}

func (d *plantedDoor) RealDir(rel string) (string, error) {
	if err := d.p.fail("realdir", rel); err != nil {
		return "", err
	}
	return d.Sandbox.RealDir(rel)
}

func (d *plantedDoor) OpenRead(rel string) (*os.File, fs.FileInfo, error) {
	if err := d.p.fail("open", rel); err != nil {
		return nil, nil, err
	}
	return d.Sandbox.OpenRead(rel)
}

func (d *plantedDoor) ReadTail(rel string, n int64) ([]byte, error) {
	if err := d.p.fail("read", rel); err != nil {
		return nil, err
	}
	return d.Sandbox.ReadTail(rel, n)
}

func (d *plantedDoor) WriteFile(rel string, data []byte) error {
	if err := d.p.fail("write", rel); err != nil {
		return err
	}
	return d.Sandbox.WriteFile(rel, data)
}

func (d *plantedDoor) WriteJSON(rel string, v any) error {
	if err := d.p.fail("write", rel); err != nil {
		return err
	}
	return d.Sandbox.WriteJSON(rel, v)
}

func (d *plantedDoor) WriteFiles(files []sandbox.File) error {
	if err := d.p.fail("write", "batch"); err != nil {
		return err
	}
	return d.Sandbox.WriteFiles(files)
}

func (d *plantedDoor) AppendFile(rel string, data []byte) error {
	if err := d.p.fail("append", rel); err != nil {
		return err
	}
	return d.Sandbox.AppendFile(rel, data)
}

func (d *plantedDoor) AppendLog(rel string, data []byte, maxBytes int64) error {
	if err := d.p.fail("append", rel); err != nil {
		return err
	}
	return d.Sandbox.AppendLog(rel, data, maxBytes)
}

func (d *plantedDoor) OpenAppend(rel string) (*os.File, error) {
	if err := d.p.fail("open", rel); err != nil {
		return nil, err
	}
	return d.Sandbox.OpenAppend(rel)
}

func (d *plantedDoor) Update(rel string, fn func(old []byte) ([]byte, error)) error {
	if err := d.p.fail("update", rel); err != nil {
		return err
	}
	return d.Sandbox.Update(rel, fn)
}

func (d *plantedDoor) Lock(name string) (func(), error) {
	if err := d.p.fail("lock", name); err != nil {
		return nil, err
	}
	return d.Sandbox.Lock(name)
}

func (d *plantedDoor) MkdirAll(rel string) error {
	if err := d.p.fail("mkdir", rel); err != nil {
		return err
	}
	return d.Sandbox.MkdirAll(rel)
}

func (d *plantedDoor) Remove(rel string) error {
	if err := d.p.fail("remove", rel); err != nil {
		return err
	}
	return d.Sandbox.Remove(rel)
}

func (d *plantedDoor) CheckWrite(rel string) (string, error) {
	if err := d.p.fail("check", rel); err != nil {
		return "", err
	}
	return d.Sandbox.CheckWrite(rel)
}

func (d *plantedDoor) CheckRead(rel string) (string, error) {
	if err := d.p.fail("check", rel); err != nil {
		return "", err
	}
	return d.Sandbox.CheckRead(rel)
}

// writeAllToolsAgent writes an agents file with one agent that may call
// every built-in tool and write anywhere in the project, so that one
// session walks them all.
func writeAllToolsAgent(t *testing.T, file string) {
	t.Helper()
	var names []string
	for _, tl := range all.Tools() {
		names = append(names, tool.NameOf(tl))
	}
	doc := map[string]any{"agents": []any{map[string]any{
		"name": "devloop-all", "short": "all",
		"cli":     map[string]any{"toolPolicy": names},
		"sandbox": map[string]any{"cwd": ".", "writeAllowList": []string{"**"}, "commands": "best-effort"},
	}}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the regular files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}
