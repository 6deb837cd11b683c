package triage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
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

// jsRoutes analyses one JS/TS file as a unit of its own.
func jsRoutes(file, src string) []implRoute {
	return jsAnalyze(map[string][]byte{file: []byte(src)}, nil).routes
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
		{"typescript generics", "// TypeScript\napp.get<{ Params: { id: string } }>('/ts/:id', h)", []string{"GET /ts/:id @2"}},
		{"all methods", "app.all('/any', h)", []string{"ALL /any @1"}},
		{"line comment", "// app.get('/c1', h)\napp.get('/real', h)", []string{"GET /real @2"}},
		{"block comment spanning lines", "/*\n app.post('/c2', h)\n*/\napp.get('/after', h)", []string{"GET /after @4"}},
		{"route inside a string", "const s = \"app.get('/s1', h)\"; const u = 'router.post(\"/s2\", h)'\napp.get('/ok', h)", []string{"GET /ok @2"}},
		{"route inside a template", "const doc = `app.get('/t1', h) ${ app.get ? '}' : `app.put('/t2', h)` }`\napp.get('/ok', h)", []string{"GET /ok @2"}},
		{"route inside a regex", "const re = /app.get\\('\\/r1', h\\)/g\napp.get('/ok', h)", []string{"GET /ok @2"}},
		{"division is not a regex", "const half = total / 2; app.get('/div', h); const q = x / y", []string{"GET /div @1"}},
		{"dynamic template path", "app.get(`/v/${version}`, h)", nil},
		{"client calls are not routes", "await fetch('/x')\nrequest(app).get('/y').expect(200)\ncache.get('/z')\napi.get(url, h)", nil},
		{"a file that does not parse has no routes", "const bad = 'oops\napp.get('/still', h)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file := "f.js"
			if strings.Contains(tt.src, "// TypeScript") {
				file = "f.ts"
			}
			got := routeStrings(jsRoutes(file, tt.src))
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
	a := goAnalyze(map[string][]byte{"main.go": []byte(src)})
	rs, un := a.routes, a.unresolved
	want := []string{"GET /items/{id} @6", "POST /items @7", "ALL /health @8", "PUT /g/{id} @10", "PATCH /g/{id} @10",
		"GET /chi/{id} @11", "GET /gin/:id @12", "GET /exact/{$} @15"}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Line < rs[j].Line })
	if got := routeStrings(rs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if len(un) != 1 || un[0].Line != 14 || !strings.Contains(un[0].Reason, "computed at run time") {
		t.Errorf("unresolved = %+v, want the pattern built at run time at line 14", un)
	}
	if bad := goAnalyze(map[string][]byte{"bad.go": []byte("package main\nfunc {")}).unparsed; len(bad) != 1 {
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

// Routers mounted under prefixes, across files, per framework.
func TestMountedRouters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		files      map[string]string
		want       []string
		unresolved []string
	}{
		{"fastify register with prefix", map[string]string{
			"src/server.ts": "import Fastify from 'fastify';\nimport orders from './orders';\nconst app = Fastify();\napp.register(orders, { prefix: '/v2/orders' });\napp.get('/health', async () => ({ ok: true }));\n",
			"src/orders.ts": "import type { FastifyInstance } from 'fastify';\nexport default async function orders(f: FastifyInstance) {\n  f.get('/', async () => []);\n  f.delete<{ Params: { id: string } }>('/:id', async () => null);\n}\n",
		}, []string{"GET /health @5", "GET /v2/orders @3", "DELETE /v2/orders/:id @4"}, nil},
		{"hono route and basePath", map[string]string{
			"src/index.ts": "import { Hono } from 'hono';\nimport { books } from './books';\nconst app = new Hono().basePath('/api');\napp.route('/books', books);\n",
			"src/books.ts": "import { Hono } from 'hono';\nexport const books = new Hono();\nbooks.get('/', (c) => c.json([]));\nbooks.post('/:id/loan', (c) => c.json({}));\n",
		}, []string{"GET /api/books @3", "POST /api/books/:id/loan @4"}, nil},
		{"koa-router prefix and nested use", map[string]string{
			"app.js": "const Koa = require('koa');\nconst Router = require('@koa/router');\nconst app = new Koa();\nconst api = new Router({ prefix: '/api' });\nconst users = new Router();\nusers.get('/:id', show);\napi.use('/users', users.routes());\napp.use(api.routes());\n",
		}, []string{"GET /api/users/:id @6"}, nil},
		{"express function handed the app", map[string]string{
			"server.js":       "const express = require('express');\nconst app = express();\nrequire('./routes/index')(app);\n",
			"routes/index.js": "module.exports = function routes(app) {\n  app.get('/a', h);\n  app.post(`/b/${'x'}`, h);\n};\n",
		}, []string{"GET /a @2", "POST /b/x @3"}, nil},
		{"express dynamic path and unmounted router", map[string]string{
			"server.js": "const express = require('express');\nconst app = express();\nconst BASE = '/v1';\napp.get(BASE + '/ok', h);\napp.get(process.env.P + '/x', h);\nconst lost = express.Router();\nlost.get('/nowhere', h);\n",
		}, []string{"GET /v1/ok @4"}, []string{"GET /* @5", "GET /nowhere @7"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string][]byte{}
			for k, v := range tc.files {
				files[k] = []byte(v)
			}
			a := jsAnalyze(files, nil)
			rs, un, bad := a.routes, a.unresolved, a.unparsed
			if len(bad) > 0 {
				t.Fatalf("unparsed %+v", bad)
			}
			var got, gotUn []string
			for _, r := range rs {
				got = append(got, fmt.Sprintf("%s %s @%d", r.Method, r.Path, r.Line))
			}
			for _, u := range un {
				gotUn = append(gotUn, fmt.Sprintf("%s %s @%d", u.Method, u.Path, u.Line))
			}
			sort.Strings(got)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if !reflect.DeepEqual(got, want) || strings.Join(gotUn, ",") != strings.Join(tc.unresolved, ",") {
				t.Errorf("routes %q unresolved %q\nwant %q unresolved %q", got, gotUn, want, tc.unresolved)
			}
		})
	}
}

// chi Route/Group/Mount and gin groups, across files.
func TestMountedGoRouters(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{
		"cmd/api/main.go": []byte(`package main

import (
	"github.com/go-chi/chi/v5"
	"github.com/gin-gonic/gin"
)

func main() {
	r := chi.NewRouter()
	r.Get("/health", h)
	r.Route("/v2", func(r chi.Router) {
		r.Group(func(r chi.Router) {
			r.Post("/orders", h)
		})
		r.Mount("/admin", adminRouter())
	})
	g := gin.Default()
	v1 := g.Group("/v1")
	users := v1.Group("/users")
	users.GET("/:id", h)
}
`),
		"cmd/api/admin.go": []byte(`package main

import "github.com/go-chi/chi/v5"

func adminRouter() chi.Router {
	r := chi.NewRouter()
	r.Delete("/cache", h)
	return r
}
`),
	}
	a := goAnalyze(files)
	rs, un, bad := a.routes, a.unresolved, a.unparsed
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s %s %s:%d", r.Method, r.Path, r.File, r.Line))
	}
	sort.Strings(got)
	want := []string{"DELETE /v2/admin/cache cmd/api/admin.go:7", "GET /health cmd/api/main.go:10", "GET /v1/users/:id cmd/api/main.go:20", "POST /v2/orders cmd/api/main.go:13"}
	if !reflect.DeepEqual(got, want) || len(un) != 0 || len(bad) != 0 {
		t.Errorf("routes %q unresolved %+v unparsed %+v\nwant %q", got, un, bad, want)
	}
}

// TestRouterFamiliesInIsolation: each way of mounting routes the probe
// tests exercise, alone in a unit of its own against a contract of its
// own: what the diff says of each contract route, and that a route it
// cannot decide is hedged (undecided, or missing with a hedge), never
// missing without one.
func TestRouterFamiliesInIsolation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, src string
		routes          []string // contract routes "METHOD path"
		want            []string // per contract route: matched, missing, mismatch, undecided, or missing+hedge
		unresolved      int
	}{
		{name: "koa-router chained routes", file: "src/app.js",
			src:    "const Koa = require('koa');\nconst Router = require('@koa/router');\nconst app = new Koa();\nconst router = new Router();\nrouter.get('/a', h).post('/a', h).del('/b', h);\napp.use(router.routes()).use(router.allowedMethods());\n",
			routes: []string{"GET /a", "POST /a", "DELETE /b"}, want: []string{"matched", "matched", "matched"}},
		{name: "hono statement form chained", file: "src/app.ts",
			src:    "import { Hono } from 'hono';\nconst app = new Hono();\napp.get('/a', (c) => c.text('a')).put('/a', (c) => c.text('a'));\nexport default app;\n",
			routes: []string{"GET /a", "PUT /a", "PATCH /a"}, want: []string{"matched", "matched", "missing"}},
		{name: "hono chained sub-app mounted with route", file: "src/app.ts",
			src:    "import { Hono } from 'hono';\nconst sub = new Hono().get('/', (c) => c.json([])).post('/', (c) => c.json({}, 201));\nconst app = new Hono().basePath('/api');\napp.route('/orders', sub);\nexport default app;\n",
			routes: []string{"GET /api/orders", "POST /api/orders"}, want: []string{"matched", "matched"}},
		{name: "fastify plugin in a plugin, one inline without prefix", file: "src/app.js",
			src:    "import Fastify from 'fastify';\nconst app = Fastify();\nasync function inner(i) { i.get('/x', h); }\napp.register(async (a) => {\n  a.register(inner, { prefix: '/in' });\n  a.register(async (b) => { b.get('/y', h); });\n}, { prefix: '/out' });\n",
			routes: []string{"GET /out/in/x", "GET /out/y"}, want: []string{"matched", "matched"}},
		{name: "a mount at a computed prefix hedges what lies under its known part", file: "src/app.js",
			src:    "const express = require('express');\nconst app = express();\nconst admin = express.Router();\nadmin.get('/stats', h);\napp.use(process.env.ADMIN_BASE, admin);\n",
			routes: []string{"GET /admin/stats", "GET /admin/users"}, want: []string{"undecided", "missing"}, unresolved: 1},
		{name: "a router built at run time at the root hedges every missing route", file: "src/app.js",
			src:    "const express = require('express');\nconst app = express();\napp.get('/health', h);\napp.use(makeRouter());\n",
			routes: []string{"GET /health", "GET /orders"}, want: []string{"matched", "missing+hedge"}, unresolved: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var eps []string
			for i, r := range tc.routes {
				m, p, _ := strings.Cut(r, " ")
				eps = append(eps, fmt.Sprintf(`{"id":"e%d","method":%q,"path":%q,"status":200,"response":{}}`, i, m, p))
			}
			writeTree(t, dir, map[string]string{
				"contracts/c.json":   `{"name":"c","version":"1","endpoints":[` + strings.Join(eps, ",") + `]}`,
				"units/u/" + tc.file: tc.src,
			})
			out, err := diffContractVsImpl(context.Background(), newCtx(t, dir), DiffInput{Contract: "c", UnitID: "u"})
			if err != nil || !out.OK {
				t.Fatalf("diff: %v %+v", err, out)
			}
			verdict := map[string]string{}
			for _, r := range out.Matched {
				verdict[r.Method+" "+r.Path] = "matched"
			}
			for _, r := range out.Missing {
				verdict[r.Method+" "+r.Path] = "missing"
				if r.Hedge != "" {
					verdict[r.Method+" "+r.Path] = "missing+hedge"
				}
			}
			for _, r := range out.Undecided {
				verdict[r.Method+" "+r.Path] = "undecided"
			}
			for _, m := range out.MethodMismatch {
				verdict[m.ContractMethod+" "+m.Path] = "mismatch"
			}
			for i, r := range tc.routes {
				if verdict[r] != tc.want[i] {
					t.Errorf("%s: %q, want %q (out %+v)", r, verdict[r], tc.want[i], out)
				}
			}
			if len(out.Unresolved) != tc.unresolved {
				t.Errorf("unresolved %+v, want %d", out.Unresolved, tc.unresolved)
			}
		})
	}
}

// TestGoRoutesOfHandlerMethods: routes registered by methods of the unit's
// types handed a group are read under that group — the method found by the
// receiver's type (a literal, a constructor of the unit, another package's
// constructor) — and when the type cannot be known among several with that
// method, the group's routes are unresolved, not read as served elsewhere.
func TestGoRoutesOfHandlerMethods(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{
		"units/u/main.go": []byte(`package main

import (
	"github.com/labstack/echo/v4"

	"example.com/u/billing"
)

type orders struct{}
type users struct{}

func newUsers() *users { return &users{} }

func (o *orders) register(g *echo.Group) { g.GET("/:id", nil) }
func (s *users) register(g *echo.Group)  { g.POST("", nil) }

func main() {
	e := echo.New()
	api := e.Group("/api")
	o := &orders{}
	o.register(api.Group("/orders"))
	newUsers().register(api.Group("/users"))
	billing.New().Register(api.Group("/invoices"))
	mount(e, o)
}

func mount(e *echo.Echo, h interface{ register(*echo.Group) }) {
	h.register(e.Group("/v2"))
}
`),
		"units/u/billing/billing.go": []byte(`package billing

import "github.com/labstack/echo/v4"

type Handler struct{}

func New() *Handler { return &Handler{} }

func (h *Handler) Register(g *echo.Group) { g.GET("/:id", nil) }
`),
	}
	a := goAnalyze(files)
	var got []string
	for _, r := range a.routes {
		got = append(got, r.Method+" "+r.Path)
	}
	sort.Strings(got)
	want := []string{"GET /api/invoices/:id", "GET /api/orders/:id", "POST /api/users"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	if len(a.unresolved) != 1 || a.unresolved[0].Path != "/v2/*" || !strings.Contains(a.unresolved[0].Reason, "orders, users") {
		t.Errorf("unresolved %+v; want the /v2 group's routes unresolved, naming both types", a.unresolved)
	}
}
