package contract_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/contract/contracttest"
	"github.com/toolhost/toolhost/internal/testutil"
)

// files is a project held in memory, read like the sandbox reads one.
type files map[string]string

func (f files) read(rel string) ([]byte, error) {
	if s, ok := f[rel]; ok {
		return []byte(s), nil
	}
	return nil, fmt.Errorf("open %s: %w", rel, fs.ErrNotExist)
}

func shop(root, doc string) files {
	f := files{root: doc}
	for k, v := range contracttest.ShopParts {
		f[k] = v
	}
	return f
}

func load(t *testing.T, f files, root string) *contract.Contract {
	t.Helper()
	c, err := contract.Load(f.read, root, []byte(f[root]), contract.NameOf(root))
	if err != nil {
		t.Fatalf("contract.Load(%s): %v", root, err)
	}
	return c
}

// TestSplitContracts: a contract split over files as teams split it —
// servers with a base path (an absolute URL in 3.0, a relative one with a
// variable in 3.1), path items in files and in 3.1 components.pathItems,
// bodies, responses and parameters in files — reads as one contract with
// every route, each where it is declared, its body and response schemas
// among the contract's schemas.
func TestSplitContracts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, root, doc string }{
		{"3.0 YAML", "contracts/shop.yaml", contracttest.Shop30YAML},
		{"3.1 JSON", "contracts/shop.json", contracttest.Shop31JSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := shop(tc.root, tc.doc)
			c := load(t, f, tc.root)
			var routes []string
			byID := map[string]contract.Endpoint{}
			for _, e := range c.Endpoints {
				routes = append(routes, e.Method+" "+e.Path)
				byID[e.ID] = e
			}
			if strings.Join(routes, ",") != strings.Join(contracttest.ShopRoutes, ",") {
				t.Errorf("routes %v\nwant %v", routes, contracttest.ShopRoutes)
			}
			// Each endpoint at its line in the file that declares it.
			for id, want := range map[string]string{"listOrders": "contracts/shop/paths/orders.yaml", "deleteOrder": "contracts/shop/paths/order.yaml",
				"listAttachments": "contracts/shop/paths/attachments.yaml", "setOrderStatus": tc.root, "health": tc.root} {
				e := byID[id]
				lines := strings.Split(f[e.File], "\n")
				if e.File != want || e.Line < 1 || e.Line > len(lines) || !strings.Contains(strings.ToLower(lines[e.Line-1]), strings.ToLower(e.Method)) {
					t.Errorf("%s declared at %s:%d, want a line of %s naming %s", id, e.File, e.Line, want, e.Method)
				}
			}
			if e := byID["createOrder"]; e.Status != 201 || string(e.Request) != `{"$ref":"#/components/schemas/new-order"}` || string(e.Response) != `{"$ref":"#/components/schemas/Order"}` {
				t.Errorf("createOrder = %d %s %s; want 201 with the new-order body and the Order response", e.Status, e.Request, e.Response)
			}
			if e := byID["getOrder"]; e.Status != 200 || string(e.Response) != `{"$ref":"#/components/schemas/Order"}` {
				t.Errorf("getOrder = %d %s", e.Status, e.Response)
			}
			for _, ref := range []string{"Order", "item", "status", "new-order", "attachment", "Error"} {
				if _, ok := c.Schemas["#/components/schemas/"+ref]; !ok {
					t.Errorf("no schema %s in %v", ref, c.SchemaRefs())
				}
			}
			if !strings.Contains(string(c.Schemas["#/components/schemas/Order"]), `"items":{"$ref":"#/components/schemas/item"}`) {
				t.Errorf("Order = %s; want its items as a ref to the shared item schema", c.Schemas["#/components/schemas/Order"])
			}
			if len(c.Files) != len(contracttest.ShopParts) {
				t.Errorf("files %v; want the %d parts", c.Files, len(contracttest.ShopParts))
			}
		})
	}
}

// The hash of a split contract covers every file it refers to: changing a
// part changes it, reformatting one does not.
func TestSplitContractHash(t *testing.T) {
	t.Parallel()
	root := "contracts/shop.yaml"
	f := shop(root, contracttest.Shop30YAML)
	base := load(t, f, root).SHA256
	if single, _ := contract.Hash([]byte(contracttest.Shop30YAML)); single == base {
		t.Errorf("the hash of the split contract is the root file's alone")
	}
	item := "contracts/shop/schemas/item.yaml"
	changed := shop(root, contracttest.Shop30YAML)
	changed[item] = strings.Replace(f[item], "minimum: 1", "minimum: 0", 1)
	if load(t, changed, root).SHA256 == base {
		t.Errorf("changing %s did not change the hash", item)
	}
	reformatted := shop(root, contracttest.Shop30YAML)
	reformatted[item] = "{\"type\": \"object\", \"required\": [\"sku\", \"quantity\"],\n \"properties\": {\"quantity\": {\"minimum\": 1, \"type\": \"integer\"}, \"sku\": {\"type\": \"string\"}}}\n"
	if load(t, reformatted, root).SHA256 != base {
		t.Errorf("rewriting %s in JSON changed the hash", item)
	}
}

// Recursion across files stays a reference; what cannot be read is an
// error naming the ref, never a route dropped.
func TestSplitContractRefs(t *testing.T) {
	t.Parallel()
	tree := files{
		"contracts/t.yaml":      "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nservers: [{url: /api/v2}]\npaths:\n  /nodes:\n    get:\n      responses:\n        '200':\n          description: ok\n          content: {application/json: {schema: {$ref: './t/node.yaml'}}}\n",
		"contracts/t/node.yaml": "type: object\nproperties:\n  children: {type: array, items: {$ref: '#'}}\n  parent: {$ref: './node.yaml'}\n",
	}
	c := load(t, tree, "contracts/t.yaml")
	if c.Endpoints[0].Path != "/api/v2/nodes" || string(c.Schemas["#/components/schemas/node"]) != `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/components/schemas/node"}},"parent":{"$ref":"#/components/schemas/node"}}}` {
		t.Errorf("path %s, node = %s", c.Endpoints[0].Path, c.Schemas["#/components/schemas/node"])
	}
	for _, tc := range []struct{ name, ref, says string }{
		{"missing file", "./paths/gone.yaml", "contracts/paths/gone.yaml does not exist"},
		{"missing pointer", "./p.yaml#/nope", "has nothing at #/nope"},
		{"url", "https://example.com/p.yaml", "not fetched"},
		{"outside the project", "../../p.yaml", "outside the project"},
		{"loop", "./loop.yaml", "loop"},
	} {
		f := files{
			"contracts/x.yaml":    "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    $ref: '" + tc.ref + "'\n",
			"contracts/p.yaml":    "get: {responses: {'200': {description: ok}}}\n",
			"contracts/loop.yaml": "$ref: './loop.yaml'\n",
		}
		_, err := contract.Load(f.read, "contracts/x.yaml", []byte(f["contracts/x.yaml"]), "x")
		if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "paths./a") {
			t.Errorf("%s: %v; want an error at paths./a saying %q", tc.name, err, tc.says)
		}
	}
	// Bytes alone cannot follow a ref to another file: an error, never a
	// path item dropped.
	if _, err := contract.Parse([]byte(contracttest.Shop30YAML), "shop"); err == nil || !strings.Contains(err.Error(), "paths./orders") {
		t.Errorf("Parse of a split contract: %v; want the path item's ref named", err)
	}
}

// swaggerParserScript prints, for the contract it validates and
// dereferences with the reference parser, every operation as served: the
// path under its server's base path, the lowest 2xx status and the JSON
// request and response schemas, fully dereferenced.
const swaggerParserScript = `const SwaggerParser = require('@apidevtools/swagger-parser');
const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const base = (servers) => {
  if (!servers || !servers.length) return '';
  let url = servers[0].url;
  for (const [k, v] of Object.entries(servers[0].variables || {})) url = url.split('{' + k + '}').join(v.default);
  return new URL(url, 'http://relative.invalid').pathname.replace(/\/$/, '');
};
const json = (c) => c && c.content && (c.content['application/json'] || Object.values(c.content)[0]) || {};
SwaggerParser.validate(process.argv[2]).then((api) => {
  const out = [];
  for (const [p, item] of Object.entries(api.paths)) {
    for (const m of methods) {
      const op = item[m];
      if (!op) continue;
      const codes = Object.keys(op.responses).filter((c) => /^2/.test(c)).sort();
      out.push({ route: m.toUpperCase() + ' ' + base(op.servers || item.servers || api.servers) + p, status: Number(codes[0] || 0),
        request: json(op.requestBody).schema || null, response: json(op.responses[codes[0]]).schema || null });
    }
  }
  console.log(JSON.stringify(out));
}, (err) => { console.error(err.message); process.exit(1); });
`

// TestSplitContractsAgainstSwaggerParser: the reference OpenAPI parser
// validates each split contract and dereferences it; every route, status
// and schema it finds is what internal/contract reads.
func TestSplitContractsAgainstSwaggerParser(t *testing.T) {
	t.Parallel()
	node := testutil.NeedTool(t, "node", "", "apt-get install nodejs")
	parser := testutil.NeedDeps(t, ".deps/openapi/node_modules/@apidevtools/swagger-parser/package.json", "make deps (or bash scripts/deps/92-openapi-parser.sh)")
	for _, tc := range []struct{ name, root, doc string }{
		{"3.0 YAML", "contracts/shop.yaml", contracttest.Shop30YAML},
		{"3.1 JSON", "contracts/shop.json", contracttest.Shop31JSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := shop(tc.root, tc.doc)
			dir := t.TempDir()
			for rel, content := range f {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			script := filepath.Join(dir, "read.cjs")
			if err := os.WriteFile(script, []byte(swaggerParserScript), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(node, script, filepath.Join(dir, filepath.FromSlash(tc.root)))
			cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Dir(filepath.Dir(filepath.Dir(parser))))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("swagger-parser: %v\n%s", err, stderr.String())
			}
			var ref []struct {
				Route             string
				Status            int
				Request, Response any
			}
			if err := json.Unmarshal(out, &ref); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			c := load(t, f, tc.root)
			if len(ref) != len(c.Endpoints) {
				t.Fatalf("swagger-parser finds %d operations, internal/contract %d", len(ref), len(c.Endpoints))
			}
			for i, e := range c.Endpoints {
				r := ref[i]
				if got := e.Method + " " + e.Path; got != r.Route || e.Status != r.Status {
					t.Errorf("operation %d: %s → %d; swagger-parser: %s → %d", i, got, e.Status, r.Route, r.Status)
				}
				for _, s := range []struct {
					what string
					ours json.RawMessage
					ref  any
				}{{"request", e.Request, r.Request}, {"response", e.Response, r.Response}} {
					got, err := dereference(c, s.ours, 0)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, s.ref) {
						g, _ := json.Marshal(got)
						w, _ := json.Marshal(s.ref)
						t.Errorf("%s %s %s schema:\n%s\nswagger-parser:\n%s", e.Method, e.Path, s.what, g, w)
					}
				}
			}
		})
	}
}

// dereference replaces the refs of a schema by the contract's schemas.
func dereference(c *contract.Contract, raw json.RawMessage, depth int) (any, error) {
	if raw == nil {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return derefValue(c, v, depth)
}

func derefValue(c *contract.Contract, v any, depth int) (any, error) {
	if depth > 50 {
		return nil, errors.New("refs nest too deep")
	}
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok && len(x) == 1 {
			s, ok := c.Schemas[ref]
			if !ok {
				return nil, fmt.Errorf("no schema %s", ref)
			}
			return dereference(c, s, depth+1)
		}
		for k, e := range x {
			d, err := derefValue(c, e, depth+1)
			if err != nil {
				return nil, err
			}
			x[k] = d
		}
	case []any:
		for i, e := range x {
			d, err := derefValue(c, e, depth+1)
			if err != nil {
				return nil, err
			}
			x[i] = d
		}
	}
	return v, nil
}
