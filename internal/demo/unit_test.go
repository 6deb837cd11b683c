package demo

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestUnitImplementsTheContractButDelete(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newUnitMux())
	defer srv.Close()
	do := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	if code, v := do("POST", "/todos", `{"title":"write the PRD"}`); code != 201 || v["id"] != "1" {
		t.Fatalf("create: %d %v", code, v)
	}
	if code, v := do("PATCH", "/todos/1", `{"done":true}`); code != 200 || v["done"] != true {
		t.Fatalf("update: %d %v", code, v)
	}
	if code, _ := do("GET", "/todos/2", ""); code != 404 {
		t.Fatalf("missing todo: %d", code)
	}
	if code, _ := do("DELETE", "/todos/1", ""); code != 405 {
		t.Fatalf("DELETE is the demo's seeded bug and must stay unimplemented: %d", code)
	}
}
