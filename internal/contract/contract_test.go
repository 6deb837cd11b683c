package contract

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/contract/contracttest"
)

func TestHashIgnoresFormattingButNotContent(t *testing.T) {
	t.Parallel()
	a := []byte(`{"name":"todo","version":"1","endpoints":[{"id":"list","method":"GET","path":"/todos","status":200,"response":{"type":"array"}}]}`)
	b := []byte("{\n  \"version\": \"1\",\n  \"name\": \"todo\",\n  \"endpoints\": [ { \"status\": 200, \"path\": \"/todos\", \"method\": \"GET\", \"id\": \"list\", \"response\": { \"type\": \"array\" } } ]\n}\n")
	c := []byte(`{"name":"todo","version":"1","endpoints":[{"id":"list","method":"GET","path":"/todos","status":201,"response":{"type":"array"}}]}`)
	// The same document in YAML hashes like its JSON.
	y := []byte("name: todo\nversion: \"1\"\nendpoints:\n  - id: list\n    method: GET\n    path: /todos\n    status: 200\n    response: { type: array }\n")
	hash := func(doc []byte) string {
		t.Helper()
		h, err := Hash(doc)
		if err != nil {
			t.Fatalf("Hash(%s): %v", doc, err)
		}
		return h
	}
	ha, hb, hc, hy := hash(a), hash(b), hash(c), hash(y)
	if ha != hb || ha != hy {
		t.Errorf("reformatting changed the hash: %s vs %s vs YAML %s", ha, hb, hy)
	}
	if ha == hc {
		t.Errorf("changing status did not change the hash")
	}
	if hash([]byte(`{"x":1.0}`)) == hash([]byte(`{"x":1}`)) || hash([]byte("x: 1.0\n")) == hash([]byte("x: 1\n")) {
		t.Errorf("numbers must be hashed as written")
	}
	if _, err := Hash([]byte(`{"x":1} {"y":2}`)); err == nil {
		t.Errorf("trailing data must be rejected")
	}
}

// Both OpenAPI documents of the orders API read as the same contract:
// the routes in document order with their lines, request and response
// schemas through $refs, the success status, and the types.
func TestParseOpenAPI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, format string }{
		{"3.0 YAML", contracttest.Orders30YAML, FormatOpenAPI30},
		{"3.1 JSON", contracttest.Orders31JSON, FormatOpenAPI31},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(tc.doc), "orders")
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != "orders" || c.Version != "2.1.0" || c.Format != tc.format {
				t.Errorf("name %q version %q format %q", c.Name, c.Version, c.Format)
			}
			var routes []string
			lines := strings.Split(tc.doc, "\n")
			for _, e := range c.Endpoints {
				routes = append(routes, e.Method+" "+e.Path)
				if e.Line < 1 || !strings.Contains(strings.ToLower(lines[e.Line-1]), `"`+strings.ToLower(e.Method)+`"`) && !strings.Contains(lines[e.Line-1], strings.ToLower(e.Method)+":") {
					t.Errorf("%s %s at line %d: %q", e.Method, e.Path, e.Line, lines[max(0, e.Line-1)])
				}
			}
			if strings.Join(routes, ",") != strings.Join(contracttest.Routes, ",") {
				t.Errorf("routes %v, want %v", routes, contracttest.Routes)
			}
			byID := map[string]Endpoint{}
			for _, e := range c.Endpoints {
				byID[e.ID] = e
			}
			if e := byID["createOrder"]; e.Status != 201 || !strings.Contains(string(e.Request), "#/components/schemas/NewOrder") || !strings.Contains(string(e.Response), "#/components/schemas/Order") {
				t.Errorf("createOrder = %+v; want 201 with the NewOrder body and the Order response through the $refs", e)
			}
			if e := byID["deleteOrder"]; e.Status != 204 || e.Response != nil || e.Request != nil {
				t.Errorf("deleteOrder = %+v; want 204 with no content", e)
			}
			for _, ref := range []string{"#/components/schemas/Order", "#/components/schemas/OrderItem", "#/components/schemas/NewOrder", "#/components/schemas/OrderStatus"} {
				if _, ok := c.Schemas[ref]; !ok {
					t.Errorf("no schema %s in %v", ref, c.SchemaRefs())
				}
			}
		})
	}
}

func TestParseRefusesWhatIsNotAContract(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, says string }{
		{"OpenAPI with no paths and no schemas", "openapi: 3.1.0\ninfo: { title: x, version: '1' }\n", "no routes and no types"},
		{"toolhost format with no endpoints", `{"name":"todo","version":"1","endpoints":[]}`, "no routes and no types"},
		{"Swagger 2", `{"swagger":"2.0","paths":{}}`, "Swagger 2.0"},
		{"OpenAPI 2.x in the openapi field", "openapi: 2.5.0\npaths: {}\n", "only OpenAPI 3.0 and 3.1"},
		{"not YAML", "openapi: [3.1\n", "not valid YAML"},
		{"not JSON", `{"openapi": 3.1.0`, "not valid JSON"},
		{"a list", "- a\n- b\n", "not an object"},
		{"ref outside", "openapi: 3.0.0\npaths:\n  /x:\n    post:\n      requestBody: { $ref: 'other.yaml#/x' }\n      responses: {}\n", "points outside the document"},
		{"ref loop", "openapi: 3.0.0\npaths:\n  /x:\n    get:\n      responses:\n        '200': { $ref: '#/components/responses/A' }\ncomponents:\n  responses:\n    A: { $ref: '#/components/responses/A' }\n", "loop"},
		{"operationId twice", "openapi: 3.0.0\npaths:\n  /a: { get: { operationId: x } }\n  /b: { get: { operationId: x } }\n", "used twice"},
	} {
		if _, err := Parse([]byte(tc.doc), "x"); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.says)
		}
	}
}

func TestLocate(t *testing.T) {
	t.Parallel()
	files := map[string]string{"contracts/a.yaml": "x", "contracts/b.json": "y", "contracts/b.yml": "z"}
	read := func(rel string) ([]byte, error) {
		if s, ok := files[rel]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	if p, b, err := Locate(read, "a"); err != nil || p != "contracts/a.yaml" || string(b) != "x" {
		t.Errorf("Locate(a) = %s %s %v", p, b, err)
	}
	if _, _, err := Locate(read, "b"); err == nil || !strings.Contains(err.Error(), "written twice") {
		t.Errorf("Locate(b) = %v, want the two files named", err)
	}
	if _, _, err := Locate(read, "c"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Locate(c) = %v, want not exist", err)
	}
	for rel, want := range map[string]string{"contracts/a.yaml": "a", "contracts/hashes.json": "", "contracts/x/y.json": "", "contracts/B.json": "", "contracts/c.yml": "c"} {
		if got := NameOf(rel); got != want {
			t.Errorf("NameOf(%s) = %q, want %q", rel, got, want)
		}
	}
}
