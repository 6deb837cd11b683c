package triage

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/contract/contracttest"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// expressApp is a modular Express 5 app: routers in their own files, ES
// modules and a CommonJS one, mounted under prefixes, nested, a route()
// chain, and an admin router mounted at a prefix computed at run time.
// Against the orders contract it lacks DELETE /v2/orders/{id} and adds
// GET /v2/orders/:id/items.
var expressApp = map[string]string{
	"package.json": `{ "name": "orders-api", "private": true, "type": "module" }` + "\n",
	"src/app.js": `import express from 'express';
import orders from './routes/orders.js';
import { adminRouter } from './routes/admin.js';

export const app = express();
app.use(express.json());

app.get('/health', (req, res) => res.json({ ok: true }));
app.use('/v2/orders', orders);

const adminBase = process.env.ADMIN_BASE || '/admin';
app.use(adminBase, adminRouter);
`,
	"src/server.js": `import { app } from './app.js';

const server = app.listen(Number(process.argv[2]), '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => server.close());
`,
	"src/routes/orders.js": `import { Router } from 'express';
import items from './items.cjs';

const router = Router();

router.route('/')
  .get((req, res) => res.json([]))
  .post((req, res) => res.status(201).json({ id: '1' }));

router.get('/:id', (req, res) => res.json({ id: req.params.id }));
router.patch('/:id', (req, res) => res.json({ id: req.params.id }));

router.use('/:id/items', items);

export default router;
`,
	"src/routes/items.cjs": `const { Router } = require('express');

const router = Router({ mergeParams: true });
router.get('/', (req, res) => res.json([{ sku: 'a', order: req.params.id }]));

module.exports = router;
`,
	"src/routes/admin.js": `import express from 'express';

export const adminRouter = express.Router();
adminRouter.get('/stats', (req, res) => res.json({ orders: 0 }));
`,
	// A client call in a test is not a route.
	"test/orders.test.js": "import request from 'supertest';\nrequest(app).delete('/v2/orders/1');\n",
}

// goApp is a Go net/http 1.22 app: a ServeMux with method patterns, a
// second mux mounted with StripPrefix, routes registered by a function in
// another file, and a pattern read from the environment.
var goApp = map[string]string{
	"go.mod": "module example.com/orders\n\ngo 1.22\n",
	"main.go": `package main

import (
	"net/http"
	"os"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{\"ok\":true}")) })

	api := http.NewServeMux()
	registerOrders(api)
	mux.Handle("/v2/", http.StripPrefix("/v2", api))

	if p := os.Getenv("METRICS_PATH"); p != "" {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {})
	}
	http.ListenAndServe("127.0.0.1:"+os.Args[1], mux)
}
`,
	"orders.go": `package main

import "net/http"

func registerOrders(mux *http.ServeMux) {
	ok := func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) }
	mux.HandleFunc("GET /orders", ok)
	mux.HandleFunc("POST /orders", ok)
	mux.HandleFunc("GET /orders/{id}", ok)
	mux.HandleFunc("PATCH /orders/{id}", ok)
	mux.HandleFunc("GET /orders/{id}/items", ok)
}
`,
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// serve starts argv in dir with a free port appended and waits until it
// answers /health; the process is killed when the test ends.
func serve(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	port := freeLoopbackPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], fmt.Sprint(port))...)
	cmd.Dir = dir
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errText strings.Builder
	go func() { _, _ = io.Copy(&errText, bufio.NewReader(stderr)) }()
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v did not answer: %v\n%s", argv, err, errText.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// status sends method url and returns the status code.
func status(t *testing.T, method, url string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDiffOnRealApps: a modular Express app and a Go net/http 1.22 app,
// each against the orders contract (OpenAPI 3.0 YAML and 3.1 JSON) with one
// route missing and one extra: exactly those two are reported, a route or
// mount computed at run time is unresolved with its line, and the running
// app (Express's own router, Go's own ServeMux) agrees.
func TestDiffOnRealApps(t *testing.T) {
	t.Parallel()
	node := testutil.NeedTool(t, "node", "", "apt-get install nodejs")
	express := testutil.NeedDeps(t, ".deps/express/node_modules/express/package.json", "make deps (or bash scripts/deps/70-express.sh)")
	goBin := testutil.NeedTool(t, "go", "", "install Go")
	cases := []struct {
		name, unit, contractFile, contractDoc string
		files                                 map[string]string
		extra                                 string
		unresolved                            []string // "METHOD path file:line"
		start                                 func(t *testing.T, dir string) string
	}{
		{name: "express", unit: "orders-js", contractFile: "orders.yaml", contractDoc: contracttest.Orders30YAML, files: expressApp,
			extra:      "GET /v2/orders/:id/items units/orders-js/src/routes/items.cjs:4",
			unresolved: []string{"GET /*/stats units/orders-js/src/routes/admin.js:4"},
			start: func(t *testing.T, dir string) string {
				if err := os.Symlink(filepath.Dir(filepath.Dir(express)), filepath.Join(dir, "node_modules")); err != nil {
					t.Fatal(err)
				}
				return serve(t, dir, node, "src/server.js")
			}},
		{name: "go net/http", unit: "orders-go", contractFile: "orders.json", contractDoc: contracttest.Orders31JSON, files: goApp,
			extra:      "GET /v2/orders/{id}/items units/orders-go/orders.go:11",
			unresolved: []string{"ALL /* units/orders-go/main.go:17"},
			start: func(t *testing.T, dir string) string {
				build := exec.Command(goBin, "build", "-o", "orders", ".")
				build.Dir = dir
				build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
				if out, err := build.CombinedOutput(); err != nil {
					t.Fatalf("go build: %v\n%s", err, out)
				}
				return serve(t, dir, filepath.Join(dir, "orders"))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			unitDir := filepath.Join(dir, "units", tc.unit)
			writeTree(t, unitDir, tc.files)
			writeTree(t, dir, map[string]string{"contracts/" + tc.contractFile: tc.contractDoc})
			out, err := diffContractVsImpl(context.Background(), newCtx(t, dir), DiffInput{Contract: "orders", UnitID: tc.unit})
			if err != nil || !out.OK {
				t.Fatalf("diff: %v %+v", err, out)
			}
			refs := func(rs []RouteRef) []string {
				var s []string
				for _, r := range rs {
					s = append(s, fmt.Sprintf("%s %s %s:%d", r.Method, r.Path, r.File, r.Line))
				}
				return s
			}
			if len(out.Missing) != 1 || out.Missing[0].Method != "DELETE" || out.Missing[0].Path != "/v2/orders/{id}" || out.Missing[0].File != "contracts/"+tc.contractFile {
				t.Errorf("missing = %v, want only DELETE /v2/orders/{id} from the contract", refs(out.Missing))
			}
			if got := refs(out.Extra); len(got) != 1 || got[0] != tc.extra {
				t.Errorf("extra = %v, want only %s", got, tc.extra)
			}
			if len(out.Matched) != 5 || len(out.MethodMismatch) != 0 || len(out.Unparsed) != 0 || len(out.Undecided) != 0 {
				t.Errorf("matched %v, mismatches %+v, unparsed %+v, undecided %v; want the other 5 contract routes matched", refs(out.Matched), out.MethodMismatch, out.Unparsed, refs(out.Undecided))
			}
			var un []string
			for _, u := range out.Unresolved {
				un = append(un, fmt.Sprintf("%s %s %s:%d", u.Method, u.Path, u.File, u.Line))
			}
			if strings.Join(un, ",") != strings.Join(tc.unresolved, ",") {
				t.Errorf("unresolved = %v (%+v), want %v", un, out.Unresolved, tc.unresolved)
			}
			// The running app says the same.
			base := tc.start(t, unitDir)
			for _, r := range out.Matched {
				if code := status(t, r.Method, base+strings.ReplaceAll(r.Path, "{id}", "7")); code == 404 || code == 405 {
					t.Errorf("the app answers %s %s with %d, but the diff says it serves it", r.Method, r.Path, code)
				}
			}
			if code := status(t, "DELETE", base+"/v2/orders/7"); code != 404 && code != 405 {
				t.Errorf("the app answers DELETE /v2/orders/7 with %d, but the diff says it is missing", code)
			}
			if code := status(t, "GET", base+"/v2/orders/7/items"); code != 200 {
				t.Errorf("the app answers the extra GET /v2/orders/7/items with %d", code)
			}
		})
	}
}

// TestOpenAPIDevloopOverStdio: an OpenAPI 3.0 YAML contract through the
// whole devloop, each agent a real toolhost serve: the Architect records its
// hash, the Coder bridges it to TypeScript (checked by the real tsc
// --strict) and Go (checked by go vet), and the Triager diffs it against the
// unit's Express app.
func TestOpenAPIDevloopOverStdio(t *testing.T) {
	t.Parallel()
	tsc := testutil.NeedTool(t, "tsc", "TOOLHOST_TSC", "make deps (or bash scripts/deps/10-typescript.sh)")
	goBin := testutil.NeedTool(t, "go", "", "install Go")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"contracts/orders.yaml": contracttest.Orders30YAML})
	writeTree(t, filepath.Join(dir, "units", "orders-js"), expressApp)
	serveAs := func(agent string, extra ...string) *stdioclient.Client {
		return testutil.Serve(t, append([]string{"--project-dir", dir, "--agent", agent}, extra...)...)
	}
	architect, coder, triager := serveAs("architect"), serveAs("coder", "--unit", "orders-js"), serveAs("bug-triager")

	var hashed struct {
		SHA256 string `json:"sha256"`
	}
	testutil.ResultOK(t, "hash_contract", testutil.CallTool(t, architect, "hash_contract", map[string]any{"path": "contracts/orders.yaml"}), &hashed)
	var bridged [2]struct {
		Files  []string `json:"files"`
		SHA256 string   `json:"sha256"`
		Types  int      `json:"types"`
		Routes int      `json:"routes"`
	}
	for i, lang := range []string{"ts", "go"} {
		args := map[string]any{"contract": "orders", "lang": lang}
		if lang == "go" {
			args["package"] = "orders"
		}
		testutil.ResultOK(t, "contract_bridge", testutil.CallTool(t, coder, "contract_bridge", args), &bridged[i])
		if bridged[i].SHA256 != hashed.SHA256 || bridged[i].Routes != 6 || bridged[i].Types < 4 {
			t.Fatalf("contract_bridge %s = %+v; want the recorded hash %s, 6 routes and the components' types", lang, bridged[i], hashed.SHA256)
		}
	}
	src := filepath.Join(dir, "units", "orders-js", "src")
	use := `import type { Order, NewOrder, OrderStatus } from './orders.gen';
import { CREATE_ORDER_PATH, CREATE_ORDER_STATUS, getOrderPath, routes } from './orders.gen';

const status: OrderStatus = 'paid';
const draft: NewOrder = { items: [{ sku: 'a', quantity: 1 }], note: null };
const order: Order = { ...draft, id: '1', status, created_at: 'now' };
const path: string = getOrderPath({ id: '7' });
const created: 201 = CREATE_ORDER_STATUS;
// @ts-expect-error an order needs its items
const bad: NewOrder = {};
export const all = [order, path, created, bad, CREATE_ORDER_PATH, routes.deleteOrder.method];
`
	if err := os.WriteFile(filepath.Join(src, "use.ts"), []byte(use), 0o644); err != nil {
		t.Fatal(err)
	}
	tscCmd := exec.Command(tsc, "--noEmit", "--strict", "--target", "es2020", "--module", "esnext", "--moduleResolution", "bundler", "use.ts", "orders.gen.ts")
	tscCmd.Dir = src
	if out, err := tscCmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc --strict on the generated TypeScript: %v\n%s", err, out)
	}
	goDir := t.TempDir()
	gen, err := os.ReadFile(filepath.Join(src, "orders_gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, goDir, map[string]string{"go.mod": "module example.com/orders\n\ngo 1.22\n", "orders_gen.go": string(gen)})
	vet := exec.Command(goBin, "vet", "./...")
	vet.Dir = goDir
	vet.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=off")
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("go vet on the generated Go: %v\n%s", err, out)
	}
	// The generated files are sources of the unit now: they declare no
	// routes, so the diff is the app's alone.
	var diff DiffOutput
	testutil.ResultOK(t, "diff_contract_vs_impl", testutil.CallTool(t, triager, "diff_contract_vs_impl", map[string]any{"contract": "orders", "unit_id": "orders-js"}), &diff)
	if len(diff.Missing) != 1 || diff.Missing[0].Method != "DELETE" || len(diff.Extra) != 1 || diff.Extra[0].Path != "/v2/orders/:id/items" || len(diff.Matched) != 5 {
		t.Fatalf("diff = missing %+v, extra %+v, matched %d; want DELETE /v2/orders/{id} missing and GET /v2/orders/:id/items extra", diff.Missing, diff.Extra, len(diff.Matched))
	}
}

// TestSplitContractOverStdio: an OpenAPI contract split over files, through
// the real toolhost serve of each agent: hash_contract covers every part
// (a change in one is a changed hash), contract_bridge writes every route —
// the path items in files and in components.pathItems among them — under
// the servers' base path, with types the real tsc --strict and go vet
// accept, and the hash hash_contract recorded.
func TestSplitContractOverStdio(t *testing.T) {
	t.Parallel()
	tsc := testutil.NeedTool(t, "tsc", "TOOLHOST_TSC", "make deps (or bash scripts/deps/10-typescript.sh)")
	goBin := testutil.NeedTool(t, "go", "", "install Go")
	for _, tc := range []struct{ name, root, doc string }{
		{"3.0 YAML", "contracts/shop.yaml", contracttest.Shop30YAML},
		{"3.1 JSON", "contracts/shop.json", contracttest.Shop31JSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeTree(t, dir, contracttest.ShopParts)
			writeTree(t, dir, map[string]string{tc.root: tc.doc, "units/shop/package.json": "{}\n"})
			architect := testutil.Serve(t, "--project-dir", dir, "--agent", "architect")
			coder := testutil.Serve(t, "--project-dir", dir, "--agent", "coder", "--unit", "shop")
			var hashed struct {
				SHA256  string   `json:"sha256"`
				Changed bool     `json:"changed"`
				Files   []string `json:"files"`
			}
			testutil.ResultOK(t, "hash_contract", testutil.CallTool(t, architect, "hash_contract", map[string]any{"path": tc.root}), &hashed)
			if len(hashed.Files) != len(contracttest.ShopParts) {
				t.Errorf("hash_contract files %v; want the %d parts", hashed.Files, len(contracttest.ShopParts))
			}
			var bridged struct {
				SHA256 string `json:"sha256"`
				Routes int    `json:"routes"`
				Types  int    `json:"types"`
			}
			for _, lang := range []string{"ts", "go"} {
				testutil.ResultOK(t, "contract_bridge", testutil.CallTool(t, coder, "contract_bridge", map[string]any{"contract": "shop", "lang": lang}), &bridged)
				if bridged.SHA256 != hashed.SHA256 || bridged.Routes != len(contracttest.ShopRoutes) || bridged.Types < 6 {
					t.Fatalf("contract_bridge %s = %+v; want the recorded hash %s and all %d routes", lang, bridged, hashed.SHA256, len(contracttest.ShopRoutes))
				}
			}
			src := filepath.Join(dir, "units", "shop", "src")
			gen, err := os.ReadFile(filepath.Join(src, "shop.gen.ts"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"/api/v1/orders/{id}/attachments"`, `"/health"`, "export interface Order ", "export interface Attachment "} {
				if !strings.Contains(string(gen), want) {
					t.Errorf("shop.gen.ts lacks %s", want)
				}
			}
			use := `import type { Order, CreateOrderRequest } from './shop.gen';
import { LIST_ATTACHMENTS_PATH, listAttachmentsPath, SET_ORDER_STATUS_METHOD } from './shop.gen';

const draft: CreateOrderRequest = { items: [{ sku: 'a', quantity: 1 }] };
const order: Order = { id: '1', status: 'paid', items: draft.items };
const method: 'PATCH' = SET_ORDER_STATUS_METHOD;
// @ts-expect-error an order's status is one of the enum's
const bad: Order = { id: '1', status: 'lost', items: [] };
export const all = [order, method, bad, LIST_ATTACHMENTS_PATH, listAttachmentsPath({ id: '7' })];
`
			if err := os.WriteFile(filepath.Join(src, "use.ts"), []byte(use), 0o644); err != nil {
				t.Fatal(err)
			}
			tscCmd := exec.Command(tsc, "--noEmit", "--strict", "--target", "es2020", "--module", "esnext", "--moduleResolution", "bundler", "use.ts", "shop.gen.ts")
			tscCmd.Dir = src
			if out, err := tscCmd.CombinedOutput(); err != nil {
				t.Fatalf("tsc --strict on the generated TypeScript: %v\n%s", err, out)
			}
			goDir := t.TempDir()
			goGen, err := os.ReadFile(filepath.Join(src, "shop_gen.go"))
			if err != nil {
				t.Fatal(err)
			}
			writeTree(t, goDir, map[string]string{"go.mod": "module example.com/shop\n\ngo 1.22\n", "shop_gen.go": string(goGen)})
			vet := exec.Command(goBin, "vet", "./...")
			vet.Dir = goDir
			vet.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=off")
			if out, err := vet.CombinedOutput(); err != nil {
				t.Fatalf("go vet on the generated Go: %v\n%s", err, out)
			}
			// A part changes: the contract's hash changes.
			item := filepath.Join(dir, "contracts", "shop", "schemas", "item.yaml")
			if err := os.WriteFile(item, []byte(strings.Replace(contracttest.ShopParts["contracts/shop/schemas/item.yaml"], "minimum: 1", "minimum: 2", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			prev := hashed.SHA256
			testutil.ResultOK(t, "hash_contract", testutil.CallTool(t, architect, "hash_contract", map[string]any{"path": tc.root}), &hashed)
			if !hashed.Changed || hashed.SHA256 == prev {
				t.Errorf("after %s changed, hash_contract = %+v; want changed", item, hashed)
			}
		})
	}
}
