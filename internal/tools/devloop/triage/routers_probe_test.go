package triage

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/contract/contracttest"
	"github.com/toolhost/toolhost/internal/testutil"
)

// The shop apps of testdata/routers serve the split shop contract of
// contracttest as frameworks mount routes — Fastify plugins registered in
// plugins (one inline, without a prefix), a Hono sub-app built as one chain
// and mounted with route(), @koa/router with chained routes and
// allowedMethods(), echo routes registered by a method of a handler type
// handed a group, gin groups through a function, a chi router a function
// returns, fiber groups of groups — each with the same three planted
// differences from the contract: DELETE /api/v1/orders/{id} is missing,
// PATCH …/status is served as PUT, and GET …/items is extra.

const (
	routersDeps   = "make deps (or bash scripts/deps/90-routers.sh)"
	goRoutersDeps = "make deps (or bash scripts/deps/91-go-routers.sh)"
)

// routerApp is one app of testdata/routers.
type routerApp struct {
	name, lang string
	// contract is the shop contract's root, 3.0 YAML or 3.1 JSON.
	contractRoot, contractDoc string
}

func routerApps() []routerApp {
	apps := []routerApp{{name: "fastify", lang: "js"}, {name: "hono", lang: "js"}, {name: "koa", lang: "js"},
		{name: "gin", lang: "go"}, {name: "echo", lang: "go"}, {name: "chi", lang: "go"}, {name: "fiber", lang: "go"}}
	for i := range apps {
		apps[i].contractRoot, apps[i].contractDoc = "contracts/shop.yaml", contracttest.Shop30YAML
		if i%2 == 1 {
			apps[i].contractRoot, apps[i].contractDoc = "contracts/shop.json", contracttest.Shop31JSON
		}
	}
	return apps
}

// appFiles reads an app's source as its unit holds it: the JS apps whole,
// a Go app with the test module's go.mod.
func appFiles(t *testing.T, lang, name string) map[string]string {
	t.Helper()
	root := filepath.Join("testdata", "routers", lang, name)
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lang == "go" {
		mod, err := os.ReadFile(filepath.Join("testdata", "routers", "go", "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		files["go.mod"] = string(mod)
	}
	return files
}

// startApp builds (Go, NestJS) and starts the app in unitDir and returns
// its base URL once it answers /health.
func startApp(t *testing.T, lang, name, unitDir string) string {
	t.Helper()
	if lang == "go" {
		goBin := testutil.NeedTool(t, "go", "", "install Go")
		testutil.NeedDeps(t, "internal/tools/devloop/triage/testdata/routers/go/go.sum", goRoutersDeps)
		bin := filepath.Join(t.TempDir(), name)
		build := exec.Command(goBin, "build", "-o", bin, "./"+name)
		build.Dir = filepath.Join("testdata", "routers", "go")
		build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s (%s): %v\n%s", name, goRoutersDeps, err, out)
		}
		return serve(t, unitDir, bin)
	}
	node := testutil.NeedTool(t, "node", "", "apt-get install nodejs")
	prefix := ".deps/routers"
	if name == "nest" {
		prefix = ".deps/nest"
	}
	nm := testutil.NeedDeps(t, prefix+"/node_modules", routersDeps)
	if err := os.Symlink(nm, filepath.Join(unitDir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if name == "nest" {
		tsc := testutil.NeedTool(t, "tsc", "TOOLHOST_TSC", "make deps (or bash scripts/deps/10-typescript.sh)")
		build := exec.Command(tsc, "-p", ".")
		build.Dir = unitDir
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("tsc -p . (the unit's tsconfig, decorators on): %v\n%s", err, out)
		}
		return serve(t, unitDir, node, "dist/main.js")
	}
	return serve(t, unitDir, node, "src/server.js")
}

// probe sends method to url (a JSON body for the methods that carry one)
// and returns the status.
func probe(t *testing.T, method, url string) int {
	t.Helper()
	var req *http.Request
	switch method {
	case "POST", "PUT", "PATCH":
		req, _ = http.NewRequest(method, url, strings.NewReader(`{"items":[{"sku":"a","quantity":1}],"status":"paid"}`))
		req.Header.Set("Content-Type", "application/json")
	default:
		req, _ = http.NewRequest(method, url, nil)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// served is what a status says of a route: the app has it.
func served(code int) bool { return code != http.StatusNotFound && code != http.StatusMethodNotAllowed }

func concrete(p string) string {
	for _, param := range []string{"{id}", ":id"} {
		p = strings.ReplaceAll(p, param, "7")
	}
	return p
}

// TestRoutersAgainstTheProbe: for each framework's app, what
// diff_contract_vs_impl says of every contract route and every extra route
// is what the running app answers; the planted differences are found, and
// nothing is left undecided or unresolved.
func TestRoutersAgainstTheProbe(t *testing.T) {
	t.Parallel()
	for _, app := range routerApps() {
		t.Run(app.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			unitDir := filepath.Join(dir, "units", app.name)
			writeTree(t, unitDir, appFiles(t, app.lang, app.name))
			writeTree(t, dir, contracttest.ShopParts)
			writeTree(t, dir, map[string]string{app.contractRoot: app.contractDoc})
			out, err := diffContractVsImpl(context.Background(), newCtx(t, dir), DiffInput{Contract: "shop", UnitID: app.name})
			if err != nil || !out.OK {
				t.Fatalf("diff: %v %+v", err, out)
			}
			summary := fmt.Sprintf("matched %v\nmissing %v\nmismatch %+v\nextra %v\nunresolved %+v\nundecided %v\nunparsed %+v",
				refStrings(out.Matched), refStrings(out.Missing), out.MethodMismatch, refStrings(out.Extra), out.Unresolved, refStrings(out.Undecided), out.Unparsed)
			if len(out.Matched) != 5 || len(out.Missing) != 1 || out.Missing[0].Method != "DELETE" ||
				len(out.MethodMismatch) != 1 || out.MethodMismatch[0].ContractMethod != "PATCH" || out.MethodMismatch[0].ImplMethod != "PUT" ||
				len(out.Extra) != 1 || !strings.HasSuffix(out.Extra[0].Path, "/items") ||
				len(out.Unresolved) != 0 || len(out.Undecided) != 0 || len(out.Unparsed) != 0 {
				t.Errorf("want 5 matched, DELETE …/{id} missing, PATCH …/status served as PUT, GET …/items extra, nothing unresolved; got\n%s", summary)
			}
			base := startApp(t, app.lang, app.name, unitDir)
			for _, r := range out.Matched {
				if code := probe(t, r.Method, base+concrete(r.Path)); !served(code) {
					t.Errorf("the app answers %s %s with %d, but the diff says it serves it", r.Method, r.Path, code)
				}
			}
			for _, r := range out.Missing {
				if code := probe(t, r.Method, base+concrete(r.Path)); served(code) {
					t.Errorf("the app answers %s %s with %d, but the diff says it is missing", r.Method, r.Path, code)
				}
			}
			for _, m := range out.MethodMismatch {
				if code := probe(t, m.ContractMethod, base+concrete(m.Path)); served(code) {
					t.Errorf("the app answers %s %s with %d, but the diff says it is served as %s", m.ContractMethod, m.Path, code, m.ImplMethod)
				}
				if code := probe(t, m.ImplMethod, base+concrete(m.Path)); !served(code) {
					t.Errorf("the app answers %s %s with %d, but the diff says it serves it", m.ImplMethod, m.Path, code)
				}
			}
			for _, r := range out.Extra {
				if code := probe(t, r.Method, base+concrete(r.Path)); code/100 != 2 {
					t.Errorf("the app answers the extra %s %s with %d", r.Method, r.Path, code)
				}
			}
		})
	}
}

func refStrings(rs []RouteRef) []string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%s %s %s:%d", r.Method, r.Path, r.File, r.Line))
	}
	return s
}

// TestUnreadableRoutesAreSaidSo: a NestJS app (decorators, enabled by the
// unit's tsconfig) and a bare node:http server declare routes no reader
// here reads: diff_contract_vs_impl says so (ok:false, "routes not
// readable", naming where), never an app with no routes and every contract
// route missing; the decorators parse. The running Nest app serves the
// contract's routes, which is what a verdict of "no routes" would have
// denied.
func TestUnreadableRoutesAreSaidSo(t *testing.T) {
	t.Parallel()
	bare := map[string]string{
		"package.json": `{ "name": "shop-bare", "private": true }` + "\n",
		"src/server.js": `const http = require('node:http');

http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') return res.end('{"ok":true}');
  res.statusCode = 404;
  res.end();
}).listen(Number(process.argv[2]), '127.0.0.1');
`,
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		says  []string
	}{
		{"nest", appFiles(t, "js", "nest"), []string{"routes not readable", "NestJS", `units/nest/src/orders.controller.ts:5 @Controller("orders")`, `units/nest/src/app.module.ts:4 @Controller("health")`}},
		{"bare", bare, []string{"routes not readable", "creates no app or router this tool reads", "(it imports node:http)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			unitDir := filepath.Join(dir, "units", tc.name)
			writeTree(t, unitDir, tc.files)
			writeTree(t, dir, contracttest.ShopParts)
			writeTree(t, dir, map[string]string{"contracts/shop.yaml": contracttest.Shop30YAML})
			_, err := diffContractVsImpl(context.Background(), newCtx(t, dir), DiffInput{Contract: "shop", UnitID: tc.name})
			reason := failReason(t, err)
			for _, want := range tc.says {
				if !strings.Contains(reason, want) {
					t.Errorf("reason %q; want it to say %q", reason, want)
				}
			}
			if strings.Contains(reason, "decorator") && strings.Contains(reason, "enabled") {
				t.Errorf("reason %q reports a decorator parse error", reason)
			}
			if tc.name != "nest" {
				return
			}
			// The decorators parse with the unit's tsconfig.
			srcs, configs := map[string][]byte{}, map[string][]byte{"units/nest/tsconfig.json": []byte(tc.files["tsconfig.json"])}
			for rel, content := range tc.files {
				if strings.HasSuffix(rel, ".ts") {
					srcs["units/nest/"+rel] = []byte(content)
				}
			}
			if bad := jsAnalyze(srcs, configs).unparsed; len(bad) != 0 {
				t.Errorf("with experimentalDecorators on, unparsed %+v", bad)
			}
			base := startApp(t, "js", "nest", unitDir)
			for _, r := range []string{"GET /health", "GET /api/v1/orders", "POST /api/v1/orders", "GET /api/v1/orders/7/attachments"} {
				method, p, _ := strings.Cut(r, " ")
				if code := probe(t, method, base+p); code/100 != 2 {
					t.Errorf("the Nest app answers %s with %d", r, code)
				}
			}
		})
	}
}
