package integrator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// itemServer answers like the unitserver's echo mode and records bodies.
func itemServer(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	items := map[string]map[string]any{}
	var bodies []string
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var item map[string]any
		if err := json.Unmarshal(b, &item); err != nil {
			reply(w, 400, map[string]any{"error": err.Error()})
			return
		}
		mu.Lock()
		bodies = append(bodies, string(b))
		id := "item-" + strconv.Itoa(len(items)+1)
		item["id"] = id
		items[id] = item
		mu.Unlock()
		reply(w, 201, item)
	})
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		item, ok := items[r.PathValue("id")]
		mu.Unlock()
		if !ok {
			reply(w, 404, map[string]any{"error": "no such item"})
			return
		}
		reply(w, 200, item)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), bodies...) }
}

func threeStepCase(base string) *Case {
	return &Case{ID: "create-item", Vars: map[string]any{"base": base}, Steps: []Step{
		{Name: "create", Method: "POST", URL: "{{var:base}}/items", Body: json.RawMessage(`{"name":"pen","tags":["a","b"],"price":1.50}`),
			Expect:  Expect{Status: 201, JSONSubset: json.RawMessage(`{"name":"pen"}`), Header: map[string]string{"content-type": "application/json"}},
			Capture: map[string]string{"id": "/id"}},
		{Name: "read back", Method: "GET", URL: "{{var:base}}/items/{{var:id}}",
			Expect: Expect{Status: 200, JSONSubset: json.RawMessage(`{"id":"{{var:id}}","tags":["a"],"price":1.5}`), Contains: `"pen"`}},
		{Name: "missing", Method: "GET", URL: "{{var:base}}/items/nope", Expect: Expect{Status: 404}},
	}}
}

func TestRunCaseThreeStepsWithCapture(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv, bodies := itemServer(t)
	out, err := runCase(context.Background(), e.c, RunCaseInput{Case: threeStepCase(srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK || out.Passed != 3 || out.Failed != 0 {
		t.Fatalf("run = %+v", out)
	}
	if got := out.Steps[0].Captured["id"]; got != "item-1" {
		t.Fatalf("captured id = %v", got)
	}
	if out.Steps[1].URL != srv.URL+"/items/item-1" {
		t.Fatalf("step 2 url = %s, want the captured id in it", out.Steps[1].URL)
	}
	if b := bodies(); len(b) != 1 || b[0] != `{"name":"pen","tags":["a","b"],"price":1.50}` {
		t.Fatalf("bodies sent = %q, want the body as given", b)
	}
	if e.progress.count() != 3 {
		t.Fatalf("progress reported %d times, want once per step", e.progress.count())
	}
	var rec RunRecord
	e.readJSON(t, out.Path, &rec)
	if rec.RunID != out.RunID || !strings.HasPrefix(out.Path, RunsDir+"/create-item-") || !rec.OK || len(rec.Steps) != 3 || rec.Vars["id"] != "item-1" {
		t.Fatalf("run file %s = %+v", out.Path, rec)
	}
}

func TestRunCaseFailingExpectationShowsDiff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv, _ := itemServer(t)
	cs := threeStepCase(srv.URL)
	cs.Steps[1].Expect.JSONSubset = json.RawMessage(`{"name":"pencil","tags":["a","b","c"],"stock":{"n":1}}`)
	out, err := runCase(context.Background(), e.c, RunCaseInput{Case: cs})
	if err != nil {
		t.Fatal(err)
	}
	if out.OK || out.Passed != 1 || out.Failed != 1 || out.Skipped != 1 || !out.Steps[2].Skipped {
		t.Fatalf("run = %+v, want step 2 failed and step 3 skipped", out)
	}
	diff := out.Steps[1].Diff
	byPtr := map[string]Mismatch{}
	for _, d := range diff {
		byPtr[d.Pointer] = d
	}
	name := byPtr["/name"]
	if name.Expected != "pencil" || name.Actual != "pen" || !strings.Contains(name.Message, `expected "pencil", got "pen"`) {
		t.Fatalf("diff at /name = %+v", name)
	}
	if m := byPtr["/tags"]; !strings.Contains(m.Message, "at least 3 elements, got 2") {
		t.Fatalf("diff at /tags = %+v", m)
	}
	if m := byPtr["/stock"]; m.Actual != nil || !strings.Contains(m.Message, "missing") {
		t.Fatalf("diff at /stock = %+v", m)
	}
	if !strings.Contains(out.Reason, "step 1 (read back) failed") || out.Steps[1].Response == "" {
		t.Fatalf("reason = %q, excerpt = %q", out.Reason, out.Steps[1].Response)
	}
}

func TestRunCaseStepChecks(t *testing.T) {
	t.Parallel()
	srv, _ := itemServer(t)
	tests := []struct {
		name string
		step Step
		want string // substring of the step's error or first diff message
	}{
		{"status", Step{Method: "GET", URL: srv.URL + "/items/x", Expect: Expect{Status: 200}}, "status: expected 200, got 404"},
		{"default 2xx", Step{Method: "GET", URL: srv.URL + "/items/x"}, "expected 2xx, got 404"},
		{"contains", Step{Method: "GET", URL: srv.URL + "/items/x", Expect: Expect{Status: 404, Contains: "gone"}}, `does not contain "gone"`},
		{"header", Step{Method: "GET", URL: srv.URL + "/items/x", Expect: Expect{Status: 404, Header: map[string]string{"X-Trace": "1"}}}, "header X-Trace is missing"},
		{"capture missing", Step{Method: "GET", URL: srv.URL + "/items/x", Expect: Expect{Status: 404}, Capture: map[string]string{"id": "/id"}}, `key "id" not found`},
		{"unresolved placeholder", Step{Method: "GET", URL: srv.URL + "/items/{{var:id}}"}, "variable id is not defined"},
		{"non-loopback", Step{Method: "GET", URL: "http://example.com/"}, "not a loopback address"},
		{"body and body_file", Step{Method: "POST", URL: srv.URL + "/items", Body: json.RawMessage(`{}`), BodyFile: "x.json"}, "not both"},
		{"connection refused", Step{Method: "GET", URL: "http://127.0.0.1:1/"}, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			out, err := runCase(context.Background(), e.c, RunCaseInput{Case: &Case{ID: "c", Steps: []Step{tt.step}}})
			if err != nil {
				t.Fatal(err)
			}
			s := out.Steps[0]
			got := s.Error
			if len(s.Diff) > 0 {
				got = s.Diff[0].Message
			}
			if out.OK || s.OK || !strings.Contains(got, tt.want) {
				t.Fatalf("step = %+v, want failure with %q", s, tt.want)
			}
		})
	}
}

func TestRunCaseFromFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv, bodies := itemServer(t)
	if err := os.MkdirAll(filepath.Join(e.dir, "integration", "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	raw := `{"name":"from file"}` + "\n"
	if err := os.WriteFile(filepath.Join(e.dir, "integration", "cases", "body.json"), []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := map[string]any{"id": "from-file", "steps": []any{map[string]any{
		"method": "POST", "url": srv.URL + "/items", "body_file": "integration/cases/body.json",
		"headers": map[string]string{"Content-Type": "application/json"}, "expect": map[string]any{"status": 201},
	}}}
	b, _ := json.Marshal(cs)
	if err := os.WriteFile(filepath.Join(e.dir, "integration", "cases", "from-file.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCase(context.Background(), e.c, RunCaseInput{CasePath: "integration/cases/from-file.json"})
	if err != nil || !out.OK {
		t.Fatalf("run = %+v, %v", out, err)
	}
	if got := bodies(); len(got) != 1 || got[0] != raw {
		t.Fatalf("body sent = %q, want the file byte for byte", got)
	}
	bad := `{"id":"bad","steps":[{"method":"FETCH","url":"x"}]}`
	if err := os.WriteFile(filepath.Join(e.dir, "integration", "cases", "bad.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"integration/cases/bad.json":     "does not match the case schema",
		"integration/cases/missing.json": "does not exist",
		"../outside.json":                "cannot be read",
	} {
		_, err := runCase(context.Background(), e.c, RunCaseInput{CasePath: path})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("case_path %s: %v, want %q", path, err, want)
		}
	}
}
