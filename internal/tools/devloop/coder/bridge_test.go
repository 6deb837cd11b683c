package coder

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/contract/contracttest"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// newCtx builds the Ctx of a coder call on a fresh project.
func newCtx(t *testing.T, unit string) *callctx.Ctx {
	t.Helper()
	return testutil.NewCtx(t, testutil.CtxOptions{Agent: "coder", Unit: unit, CallID: "call-1"})
}

func call[Out any](t *testing.T, c *callctx.Ctx, tl tool.Tool, args any) (Out, error) {
	t.Helper()
	var out Out
	raw, _ := json.Marshal(args)
	res, err := tl.Call(context.Background(), c, raw)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		t.Fatalf("decode %s: %v", res.Structured, err)
	}
	return out, nil
}

// putContract copies a fixture contract into the project's contracts/.
func putContract(t *testing.T, c *callctx.Ctx, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "contracts", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.ProjectDir, "contracts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// generate runs contract_bridge and returns the generated file's bytes.
func generate(t *testing.T, name, lang string) []byte {
	t.Helper()
	c := newCtx(t, "todo-be")
	raw := putContract(t, c, name)
	out, err := call[ContractBridgeOutput](t, c, ContractBridge(), map[string]any{"contract": name, "lang": lang})
	if err != nil || !out.OK {
		t.Fatalf("contract_bridge %s %s: %v %+v", name, lang, err, out)
	}
	want, _ := contract.Hash(raw)
	if out.SHA256 != want || !out.Changed || len(out.Files) != 1 {
		t.Fatalf("result %+v, want sha256 %s, changed, one file", out, want)
	}
	got, err := os.ReadFile(filepath.Join(c.ProjectDir, out.Files[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "Contract sha256: "+want+"\n") {
		t.Errorf("header lacks the contract hash")
	}
	// Same contract, same bytes: a second run changes nothing.
	again, err := call[ContractBridgeOutput](t, c, ContractBridge(), map[string]any{"contract": name, "lang": lang})
	if err != nil || !again.OK || again.Changed {
		t.Fatalf("second run %+v %v, want ok and unchanged", again, err)
	}
	return got
}

var fixtures = []string{"todo", "shop", "health"}

func TestContractBridgeGolden(t *testing.T) {
	t.Parallel()
	for _, name := range fixtures {
		for _, lang := range []string{"ts", "go"} {
			t.Run(name+"."+lang, func(t *testing.T) {
				t.Parallel()
				got := generate(t, name, lang)
				golden := filepath.Join("testdata", "golden", name+"."+lang+".golden")
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -run Golden -update)", err)
				}
				if string(got) != string(want) {
					t.Errorf("output differs from %s (rerun with -update if intended):\n%s", golden, got)
				}
			})
		}
	}
}

func TestContractBridgeKeepsBuiltinNamesFree(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "u")
	p := filepath.Join(c.ProjectDir, "contracts", "c.json")
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	contractJSON := `{"name":"c","definitions":{"Record":{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}}},"endpoints":[{"id":"get","method":"GET","path":"/r","status":200,"response":{"$ref":"#/definitions/Record"}}]}`
	if err := os.WriteFile(p, []byte(contractJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := call[ContractBridgeOutput](t, c, ContractBridge(), map[string]any{"contract": "c", "lang": "ts"})
	if err != nil || !out.OK {
		t.Fatalf("%v %+v", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(c.ProjectDir, out.Files[0]))
	for _, want := range []string{"export interface Record2 {", "tags?: Record<string, string>;", "export type GetResponse = Record2;"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// Go names that collide inside one type (struct fields, enum constants)
// get 2, 3 … like top-level names do.
func TestContractBridgeGoNumbersCollidingNames(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "u")
	p := filepath.Join(c.ProjectDir, "contracts", "c.json")
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	contractJSON := `{"name":"c","definitions":{"Mode":{"type":"string","enum":["in-progress","in_progress","inProgress"]}},"endpoints":[{"id":"get","method":"GET","path":"/r","status":200,"response":{"type":"object","properties":{"a-b":{"type":"string"},"a_b":{"type":"integer"}}}}]}`
	if err := os.WriteFile(p, []byte(contractJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := call[ContractBridgeOutput](t, c, ContractBridge(), map[string]any{"contract": "c", "lang": "go"})
	if err != nil || !out.OK {
		t.Fatalf("%v %+v", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(c.ProjectDir, out.Files[0]))
	for _, want := range []string{"AB  string `json:\"a-b,omitempty\"`", "AB2 int64  `json:\"a_b,omitempty\"`",
		`ModeInProgress  Mode = "in-progress"`, `ModeInProgress2 Mode = "in_progress"`, `ModeInProgress3 Mode = "inProgress"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestContractBridgeWritesIntoTheUnit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ lang, file string }{{"ts", "units/todo-be/src/health.gen.ts"}, {"go", "units/todo-be/src/health_gen.go"}} {
		c := newCtx(t, "")
		putContract(t, c, "health")
		out, err := call[ContractBridgeOutput](t, c, ContractBridge(), map[string]any{"contract": "health", "lang": tc.lang, "unit_id": "todo-be"})
		if err != nil || !out.OK || out.Files[0] != tc.file || out.Routes != 1 {
			t.Errorf("%s: %v %+v, want %s", tc.lang, err, out, tc.file)
		}
	}
}

func TestContractBridgeRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		unit     string
		contract string // written as contracts/c.json when set
		args     map[string]any
		reason   string
	}{
		{name: "no unit", args: map[string]any{"contract": "c", "lang": "ts"}, reason: "no unit"},
		{name: "missing contract", unit: "u", args: map[string]any{"contract": "nope", "lang": "ts"}, reason: "no contract nope (contracts/nope.json, .yaml or .yml); there are no contracts yet"},
		{name: "not json", unit: "u", contract: `{"name":`, args: map[string]any{"contract": "c", "lang": "ts"}, reason: "not valid JSON"},
		{name: "unknown ref", unit: "u", contract: `{"name":"c","definitions":{"A":{"type":"string"}},"endpoints":[{"id":"x","method":"GET","path":"/x","status":200,"response":{"$ref":"#/definitions/B"}}]}`,
			args: map[string]any{"contract": "c", "lang": "go"}, reason: `endpoints[0] (x).response: $ref "#/definitions/B" not found in the contract (defined: #/definitions/A)`},
		{name: "external ref", unit: "u", contract: `{"name":"c","endpoints":[{"id":"x","method":"GET","path":"/x","status":200,"response":{"$ref":"other.json#/A"}}]}`,
			args: map[string]any{"contract": "c", "lang": "ts"}, reason: "points outside the contract"},
		{name: "bad type", unit: "u", contract: `{"name":"c","endpoints":[{"id":"x","method":"GET","path":"/x","status":200,"response":{"type":"object","properties":{"a":{"type":"date"}}}}]}`,
			args: map[string]any{"contract": "c", "lang": "ts"}, reason: `response.properties.a: unknown type "date"`},
		{name: "same endpoint id twice", unit: "u", contract: `{"name":"c","endpoints":[{"id":"get-todo","method":"GET","path":"/a","status":200,"response":{}},{"id":"getTodo","method":"GET","path":"/b","status":200,"response":{}}]}`,
			args: map[string]any{"contract": "c", "lang": "ts"}, reason: `endpoints[0] id "get-todo" and endpoints[1] id "getTodo" name the same route constants`},
		{name: "endpoint id clashes with a definition in Go", unit: "u", contract: `{"name":"c","definitions":{"TodoStatus":{"type":"string","enum":["a"]}},"endpoints":[{"id":"todo","method":"GET","path":"/t","status":200,"response":{}}]}`,
			args: map[string]any{"contract": "c", "lang": "go"}, reason: "generate the name TodoStatus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCtx(t, tc.unit)
			if tc.contract != "" {
				p := filepath.Join(c.ProjectDir, "contracts", "c.json")
				_ = os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(tc.contract), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := call[ContractBridgeOutput](t, c, ContractBridge(), tc.args)
			if err != nil || out.OK || !strings.Contains(out.Reason, tc.reason) {
				t.Fatalf("want ok:false containing %q, got %v %+v", tc.reason, err, out)
			}
			if _, err := os.Stat(filepath.Join(c.ProjectDir, "units")); !os.IsNotExist(err) {
				t.Errorf("a refused call must write nothing")
			}
		})
	}
}

// tsUse exercises the generated TypeScript: strict mode must accept the
// right shapes and reject the wrong ones (an unused @ts-expect-error is
// itself an error, so a type that degraded to any fails the test).
const tsUse = `import {
  Todo, TodoStatus, CreateTodoRequest, ListTodosResponse, GetTodoResponse, SearchResponse,
  GET_TODO_METHOD, GET_TODO_PATH, getTodoPath, updateTodoStatusPath, routes, RouteId, DeleteTodoResponse,
} from './contract.gen';

const status: TodoStatus = 'in-progress';
const todo: Todo = {
  id: '1', title: 't', status, tags: [], created_at: 'now', priority: null, due: null,
  assignee: { name: 'a', email: null }, subtasks: [{ title: 's', done: false }], meta: { k: 'v' }, parent: null,
};
const req: CreateTodoRequest = { title: 'x', priority: 3, due: null, 'x-client-ref': 'r' };
const list: ListTodosResponse = { total: 1, next_cursor: null, items: [todo] };
const maybe: GetTodoResponse = null;
const hits: SearchResponse = { hits: [todo, { code: 'not_found', message: 'm' }], raw: 42 };
const gone: DeleteTodoResponse = null;
const m: 'GET' = GET_TODO_METHOD;
const p: '/todos/:id' = GET_TODO_PATH;
const url: string = getTodoPath({ id: 'a b' }) + updateTodoStatusPath({ listId: 'l', id: 'i' });
const rid: RouteId = 'create-todo';
const s201: 201 = routes['create-todo'].status;

// @ts-expect-error status must be one of the enum values
const badStatus: TodoStatus = 'closed';
// @ts-expect-error title is required
const noTitle: CreateTodoRequest = {};
// @ts-expect-error priority is 1..5
const badPriority: CreateTodoRequest = { title: 'x', priority: 9 };
// @ts-expect-error path params are typed
const noParam: string = getTodoPath({});
// @ts-expect-error id is a string
const numId: Todo = { ...todo, id: 1 };

export const all = [todo, req, list, maybe, hits, gone, m, p, url, rid, s201, badStatus, noTitle, badPriority, noParam, numId];
`

func TestGeneratedTypeScriptCompilesStrict(t *testing.T) {
	t.Parallel()
	tsc := testutil.NeedTool(t, "tsc", "TOOLHOST_TSC", "bash scripts/deps/10-typescript.sh")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "contract.gen.ts"), generate(t, "todo", "ts"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "use.ts"), []byte(tsUse), 0o644); err != nil {
		t.Fatal(err)
	}
	shop := filepath.Join(dir, "shop.gen.ts")
	if err := os.WriteFile(shop, generate(t, "shop", "ts"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tsc, "--noEmit", "--strict", "--noUnusedLocals", "--target", "es2020", "--module", "esnext",
		"--moduleResolution", "bundler", "use.ts", "contract.gen.ts", "shop.gen.ts")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc --noEmit --strict failed: %v\n%s", err, out)
	}
}

// goUse exercises the generated Go: it must type-check and round-trip JSON.
const goUse = `package contract

import (
	"encoding/json"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var todo Todo
	in := ` + "`" + `{"id":"1","title":"t","status":"done","tags":["a"],"created_at":"now","priority":null,"assignee":{"name":"n","email":null},"subtasks":[{"title":"s","done":true}],"meta":{"k":"v"}}` + "`" + `
	if err := json.Unmarshal([]byte(in), &todo); err != nil {
		t.Fatal(err)
	}
	if todo.Status != TodoStatusDone || todo.Priority != nil || todo.Assignee.Name != "n" || !todo.Subtasks[0].Done || todo.Meta["k"] != "v" {
		t.Fatalf("decoded %+v", todo)
	}
	page := ListTodosResponse{Page: Page{PagePart1: PagePart1{Total: 1}}}
	b, _ := json.Marshal(page)
	if string(b) != ` + "`" + `{"total":1,"items":null}` + "`" + ` {
		t.Fatalf("allOf must flatten: %s", b)
	}
	if got := (UpdateTodoStatusParams{ListID: "a/b", ID: "7"}).Path(); got != "/lists/a%2Fb/todos/7/status" {
		t.Fatalf("path %s", got)
	}
	if GetTodoMethod != "GET" || GetTodoPath != "/todos/:id" || CreateTodoStatus != 201 {
		t.Fatal("route constants")
	}
	var p CreateTodoRequestPriority = 3
	req := CreateTodoRequest{Title: "x", XClientRef: "r"}
	if b, _ := json.Marshal(req); string(b) != ` + "`" + `{"title":"x","x-client-ref":"r"}` + "`" + ` {
		t.Fatalf("optional fields must be omitted: %s", b)
	}
	if p != 3 {
		t.Fatal("integer enum")
	}
}
`

func TestGeneratedGoVetsAndRoundTrips(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"go.mod":           []byte("module example.com/gen\n\ngo 1.22\n"),
		"contract_gen.go":  generate(t, "todo", "go"),
		"use_test.go":      []byte(goUse),
		"shop/shop_gen.go": generate(t, "shop", "go"),
		"health/h_gen.go":  generate(t, "health", "go"),
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"vet", "./..."}, {"test", "./..."}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s on the generated code: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Each contract writes its own files: bridging a second contract never
// replaces the first one's output, and an OpenAPI contract in YAML bridges
// like any other.
func TestContractBridgeOneFilePerContract(t *testing.T) {
	t.Parallel()
	c := newCtx(t, "todo-be")
	putContract(t, c, "todo")
	if err := os.WriteFile(filepath.Join(c.ProjectDir, "contracts", "orders.yaml"), []byte(contracttest.Orders30YAML), 0o644); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, name := range []string{"todo", "orders"} {
		for _, lang := range []string{"ts", "go"} {
			out, err := call[ContractBridgeOutput](t, c, ContractBridge(), map[string]any{"contract": name, "lang": lang})
			if err != nil || !out.OK {
				t.Fatalf("%s %s: %v %+v", name, lang, err, out)
			}
			files = append(files, out.Files...)
		}
	}
	want := []string{"units/todo-be/src/todo.gen.ts", "units/todo-be/src/todo_gen.go", "units/todo-be/src/orders.gen.ts", "units/todo-be/src/orders_gen.go"}
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Fatalf("files %v, want %v", files, want)
	}
	for _, f := range want {
		b, err := os.ReadFile(filepath.Join(c.ProjectDir, f))
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".gen.ts"), "_gen.go")
		if err != nil || !strings.Contains(string(b), "from contracts/"+name+".") {
			t.Errorf("%s: not generated from contract %s: %v", f, name, err)
		}
	}
}
