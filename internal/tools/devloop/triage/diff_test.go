package triage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func routeStrings(rs []implRoute) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s @%d", r.Method, r.Path, r.Line))
	}
	return out
}

func TestJSRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
	}{
		{"express app and router", "app.get('/a', h)\nrouter.post(\"/b\", auth, h)\napp.delete('/c/:id', h)", []string{"GET /a @1", "POST /b @2", "DELETE /c/:id @3"}},
		{"express route chain", "router.route('/items/:id')\n  .get(show)\n  .patch(update)\n  .delete(remove)", []string{"GET /items/:id @1", "PATCH /items/:id @1", "DELETE /items/:id @1"}},
		{"fastify shorthand and route object", "fastify.get('/x', { schema }, async () => ({}))\nfastify.route({\n  method: ['GET', 'HEAD'],\n  url: '/y/:id',\n  schema: { querystring: { url: '/not-a-route' } },\n  handler\n})",
			[]string{"GET /x @1", "GET /y/:id @4", "HEAD /y/:id @4"}},
		{"koa-router named route and del", "router.get('user', '/users/:id', show)\nrouter.del('/users/:id', remove)", []string{"GET /users/:id @1", "DELETE /users/:id @2"}},
		{"hono on and template literal", "app.on(['PUT', 'PATCH'], '/p', h)\napp.get(`/t`, (c) => c.text('ok'))", []string{"PUT /p @1", "PATCH /p @1", "GET /t @2"}},
		{"typescript generics", "app.get<{ Params: { id: string } }>('/ts/:id', h)", []string{"GET /ts/:id @1"}},
		{"all methods", "app.all('/any', h)", []string{"ALL /any @1"}},
		{"line comment", "// app.get('/c1', h)\napp.get('/real', h)", []string{"GET /real @2"}},
		{"block comment spanning lines", "/*\n app.post('/c2', h)\n*/\napp.get('/after', h)", []string{"GET /after @4"}},
		{"route inside a string", "const s = \"app.get('/s1', h)\"; const u = 'router.post(\"/s2\", h)'\napp.get('/ok', h)", []string{"GET /ok @2"}},
		{"route inside a template", "const doc = `app.get('/t1', h) ${ app.get ? '}' : `app.put('/t2', h)` }`\napp.get('/ok', h)", []string{"GET /ok @2"}},
		{"route inside a regex", "const re = /app.get\\('\\/r1', h\\)/g\napp.get('/ok', h)", []string{"GET /ok @2"}},
		{"division is not a regex", "const half = total / 2; app.get('/div', h); const q = x / y", []string{"GET /div @1"}},
		{"dynamic template path", "app.get(`/v/${version}`, h)", nil},
		{"client calls are not routes", "await fetch('/x')\nrequest(app).get('/y').expect(200)\ncache.get('/z')\napi.get(url, h)", nil},
		{"unterminated string does not swallow the file", "const bad = 'oops\napp.get('/still', h)", []string{"GET /still @2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := routeStrings(jsRoutes("f.js", tt.src))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestGoRoutes(t *testing.T) {
	t.Parallel()
	src := `package main

import "net/http"

func routes(mux *http.ServeMux, r Router) {
	mux.HandleFunc("GET /items/{id}", show)
	mux.Handle("POST example.com/items", create)
	http.HandleFunc("/health", health)
	// mux.HandleFunc("DELETE /items/{id}", remove)
	r.HandleFunc("/g/{id}", show).Methods("PUT", "PATCH")
	r.Get("/chi/{id}", show)
	r.GET("/gin/:id", show)
	log("mux.HandleFunc(\"GET /in-a-string\", h)")
	mux.HandleFunc(dynamic, h)
	mux.HandleFunc("GET /exact/{$}", h)
}
`
	rs, err := goRoutes("main.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /items/{id} @6", "POST /items @7", "ALL /health @8", "PUT /g/{id} @10", "PATCH /g/{id} @10",
		"GET /chi/{id} @11", "GET /gin/:id @12", "GET /exact/{$} @15"}
	if got := routeStrings(rs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if _, err := goRoutes("bad.go", []byte("package main\nfunc {")); err == nil {
		t.Error("a Go syntax error was not reported")
	}
}

func TestNormalizePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/todos/:id":          "/todos/{}",
		"/todos/{id}":         "/todos/{}",
		"/todos/<id>":         "/todos/{}",
		"/todos/<int:id>":     "/todos/{}",
		"/todos/[id]":         "/todos/{}",
		"/todos/:id?":         "/todos/{}",
		"/todos/:id(\\d+)":    "/todos/{}",
		"/files/{path...}":    "/files/{}",
		"/todos/":             "/todos",
		"/exact/{$}":          "/exact",
		"/":                   "/",
		"/a/:x/b/{y}/c":       "/a/{}/b/{}/c",
		"/search?q=1":         "/search",
		"/users/:uid/todos/1": "/users/{}/todos/1",
	} {
		if got := normalizePath(in); got != want {
			t.Errorf("normalizePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDiffContractVsImpl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		unit                 string
		matched              []string
		missing, extra, mism []string
	}{
		{
			unit:    "todo-be",
			matched: []string{"GET /todos units/todo-be/src/server.js:17", "POST /todos units/todo-be/src/server.js:18", "GET /todos/{id} units/todo-be/src/server.js:20"},
			missing: []string{"DELETE /todos/{id} contracts/todos.json:36"},
			extra:   []string{"GET /health units/todo-be/src/server.js:23"},
			mism:    []string{"PATCH->PUT /todos/{id} contracts/todos.json:28 units/todo-be/src/server.js:20"},
		},
		{
			unit:    "todo-go",
			matched: []string{"GET /todos units/todo-go/main.go:10", "POST /todos units/todo-go/main.go:11", "GET /todos/{id} units/todo-go/main.go:12"},
			missing: []string{"DELETE /todos/{id} contracts/todos.json:36"},
			extra:   []string{"ALL /healthz units/todo-go/main.go:15"},
			mism:    []string{"PATCH->PUT /todos/{id} contracts/todos.json:28 units/todo-go/main.go:13"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.unit, func(t *testing.T) {
			t.Parallel()
			out, err := diffContractVsImpl(context.Background(), newCtx(t, copyProject(t)), DiffInput{Contract: "todos", UnitID: tt.unit})
			if err != nil {
				t.Fatal(err)
			}
			refs := func(rs []RouteRef) []string {
				var s []string
				for _, r := range rs {
					s = append(s, fmt.Sprintf("%s %s %s:%d", r.Method, r.Path, r.File, r.Line))
				}
				return s
			}
			var mism []string
			for _, m := range out.MethodMismatch {
				mism = append(mism, fmt.Sprintf("%s->%s %s %s:%d %s:%d", m.ContractMethod, m.ImplMethod, m.Path, m.ContractFile, m.ContractLine, m.File, m.Line))
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"matched", refs(out.Matched), tt.matched}, {"missing", refs(out.Missing), tt.missing}, {"extra", refs(out.Extra), tt.extra}, {"method_mismatch", mism, tt.mism}} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Errorf("%s = %q\nwant %q", c.what, c.got, c.want)
				}
			}
			if !out.OK || out.FilesScanned == 0 || len(out.Unparsed) != 0 {
				t.Errorf("%+v", out)
			}
		})
	}
}

func TestDiffContractVsImplFailures(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	if err := os.MkdirAll(filepath.Join(dir, "units", "docs-only"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "units", "docs-only", "README.md"), []byte("app.get('/x', h)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "contracts", "broken.json"), []byte(`{"name":"broken","endpoints":[{"id":"x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       DiffInput
		reason   string
		validErr bool
	}{
		{"unknown contract", DiffInput{Contract: "orders", UnitID: "todo-be"}, "no contract orders: contracts/orders.json, .yaml or .yml does not exist; contracts here: broken, todos", false},
		{"broken contract", DiffInput{Contract: "broken", UnitID: "todo-be"}, "endpoints[0] needs id, method and path", false},
		{"unknown unit", DiffInput{Contract: "todos", UnitID: "nope"}, "no unit nope: units/nope/ does not exist", false},
		{"unit without source", DiffInput{Contract: "todos", UnitID: "docs-only"}, "units/docs-only/ has no JS/TS or Go source", false},
		{"unit id that leaves units/", DiffInput{Contract: "todos", UnitID: ".."}, "is not a unit id", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := diffContractVsImpl(context.Background(), newCtx(t, dir), tt.in)
			if tt.validErr {
				if err == nil || !strings.Contains(err.Error(), tt.reason) {
					t.Errorf("err %v, want a validation error containing %q", err, tt.reason)
				}
				return
			}
			if r := failReason(t, err); !strings.Contains(r, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", r, tt.reason)
			}
		})
	}
}

// A Go file that does not parse is listed, and the other files still count.
func TestDiffReportsUnparsedFiles(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	if err := os.WriteFile(filepath.Join(dir, "units", "todo-go", "broken.go"), []byte("package main\nfunc {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := diffContractVsImpl(context.Background(), newCtx(t, dir), DiffInput{Contract: "todos", UnitID: "todo-go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Unparsed) != 1 || out.Unparsed[0].File != "units/todo-go/broken.go" || len(out.Matched) != 3 {
		t.Errorf("%+v", out)
	}
}
