package integrator

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParsePlaceholderText(t *testing.T) {
	t.Setenv("TOOLHOST_TEST_ALLOWED", "visible")
	t.Setenv("TOOLHOST_TEST_SECRET", "s3cret")
	e := newEnv(t)
	if err := e.c.Shared.WriteJSON(PortsPath, PortsFile{Reservations: map[string]Reservation{"api": {Port: 41234, ReservedAt: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"id": "item-7", "n": json.Number("42"), "obj": map[string]any{"a": true}}
	tests := []struct {
		name       string
		text       string
		want       string
		unresolved []string // substrings of the reasons, in order
	}{
		{"port", "http://127.0.0.1:{{port:api}}/health", "http://127.0.0.1:41234/health", nil},
		{"vars of every type", "{{var:id}}/{{ var : n }}/{{var:obj}}", `item-7/42/{"a":true}`, nil},
		{"allowed env", "mode={{env:TOOLHOST_TEST_ALLOWED}}", "mode=visible", nil},
		{"env not on the allow-list stays and is listed", "token={{env:TOOLHOST_TEST_SECRET}}", "token={{env:TOOLHOST_TEST_SECRET}}", []string{"not on the env allow-list"}},
		{"port of an unknown unit", "{{port:web}}", "{{port:web}}", []string{"call port_picker"}},
		{"undefined var", "{{var:missing}}", "{{var:missing}}", []string{"variable missing is not defined"}},
		{"unknown kind", "{{secret:x}}", "{{secret:x}}", []string{"unknown placeholder kind"}},
		{"no placeholders", "plain {text}", "plain {text}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.text
			out, err := parsePlaceholder(context.Background(), e.c, ParsePlaceholderInput{Text: &text, Vars: vars})
			if err != nil {
				t.Fatal(err)
			}
			if out.Text == nil || *out.Text != tt.want {
				t.Fatalf("text = %v, want %q", out.Text, tt.want)
			}
			if out.OK != (len(tt.unresolved) == 0) || len(out.Unresolved) != len(tt.unresolved) {
				t.Fatalf("ok=%v unresolved=%+v, want %v", out.OK, out.Unresolved, tt.unresolved)
			}
			for i, w := range tt.unresolved {
				if !strings.Contains(out.Unresolved[i].Reason, w) {
					t.Fatalf("reason %q, want %q", out.Unresolved[i].Reason, w)
				}
			}
			if strings.Contains(out.Reason, "s3cret") {
				t.Fatal("a secret's value was echoed")
			}
		})
	}
}

func TestParsePlaceholderValue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.c.Shared.WriteJSON(PortsPath, PortsFile{Reservations: map[string]Reservation{"api": {Port: 41234, ReservedAt: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	value := json.RawMessage(`{"port":"{{port:api}}","url":"http://127.0.0.1:{{port:api}}","list":[{"id":"{{var:id}}"},"{{var:nope}}"],"{{var:id}}":1,"n":12345678901234567890}`)
	out, err := parsePlaceholder(context.Background(), e.c, ParsePlaceholderInput{Value: value, Vars: map[string]any{"id": 7}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Value, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"n":12345678901234567890,"list":[{"id":7},"{{var:nope}}"],"port":41234,"url":"http://127.0.0.1:41234","{{var:id}}":1}`
	var w map[string]any
	_ = json.Unmarshal([]byte(want), &w)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("value = %s\nwant    %s", out.Value, want)
	}
	if !strings.Contains(string(out.Value), "12345678901234567890") {
		t.Fatalf("a large number lost precision: %s", out.Value)
	}
	if out.OK || len(out.Unresolved) != 1 || out.Unresolved[0].Path != "/list/1" || out.Resolved != 3 {
		t.Fatalf("ok=%v resolved=%d unresolved=%+v, want one at /list/1", out.OK, out.Resolved, out.Unresolved)
	}
}

func TestParsePlaceholderUUIDAndInputShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	text := "{{uuid}} {{uuid}}"
	out, err := parsePlaceholder(context.Background(), e.c, ParsePlaceholderInput{Text: &text})
	if err != nil || !out.OK {
		t.Fatal(out, err)
	}
	parts := strings.Split(*out.Text, " ")
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if len(parts) != 2 || !re.MatchString(parts[0]) || !re.MatchString(parts[1]) || parts[0] == parts[1] {
		t.Fatalf("uuids = %q, want two different v4 UUIDs", *out.Text)
	}
	for name, in := range map[string]ParsePlaceholderInput{
		"neither": {},
		"both":    {Text: &text, Value: json.RawMessage(`"x"`)},
	} {
		if _, err := parsePlaceholder(context.Background(), e.c, in); err == nil || !strings.Contains(err.Error(), "exactly one of text or value") {
			t.Errorf("%s: error = %v", name, err)
		}
	}
}

func TestRawJSONKeepsOrderAndNumbers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name, in, want string
	}{
		{"no placeholder: as given", `{"z": 1.50, "a": [1, 2]}`, `{"z": 1.50, "a": [1, 2]}`},
		{"typed and text substitution", `{"z":"{{var:id}}","a":1.0,"s":"id={{var:id}}","k":{"{{var:id}}":["{{var:id}}",true,null]}}`,
			`{"z":7,"a":1.0,"s":"id=7","k":{"{{var:id}}":[7,true,null]}}`},
		{"top-level array", `["{{var:id}}",{"b":"x","a":"{{var:id}}"}]`, `[7,{"b":"x","a":7}]`},
		{"top-level string", `"{{var:id}}"`, `7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newResolver(e.c, map[string]any{"id": json.Number("7")})
			got, err := r.rawJSON([]byte(tt.in), "")
			if err != nil || string(got) != tt.want {
				t.Fatalf("rawJSON(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
	if _, err := newResolver(e.c, nil).rawJSON([]byte(`{"a":`), ""); err == nil {
		t.Fatal("broken JSON accepted")
	}
}
