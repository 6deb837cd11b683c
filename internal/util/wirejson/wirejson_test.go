package wirejson_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// envelope has the shapes the hot path decodes: strings, raw values, a
// nested struct, a map, a number.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      map[string]any  `json:"_meta"`
		N         int             `json:"n"`
	} `json:"params"`
}

var seeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","n":[1,2.5e3,-0]},"_meta":{"progressToken":"t"}}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
	`{"jsonrpc":"2.0","id":null,"method":"x","params":null}`,
	`{"id":1e400,"method":"big"}`,
	`{"method":"esc \u00e9 \ud83d\ude80 \"q\" \\ \/ \b\f\n\r\t"}`,
	`{"method":"lone surrogate \ud800"}`,
	"{\"method\":\"bad utf8 \xff\xfe\"}",
	`{"params":{"name":5}}`,
	`{"params":{"n":1.5}}`,
	`{"params":{"n":"1"}}`,
	`{"Method":"case","PARAMS":{"NAME":"x"}}`,
	`{"method":"dup","method":"last"}`,
	`{"method":"x"} trailing`,
	`{"method":"x"`,
	`[1,2,3]`,
	`  {"a" : [ {"b":[]}, {} , true,false , null ] }  `,
	`"just a string"`,
	`{"id":123456789012345678901234567890}`,
	``,
	strings.Repeat("[", 70) + strings.Repeat("]", 70),
	strings.Repeat("[", 60) + `"]]]]{{{\\"` + strings.Repeat("]", 60),
}

// FuzzSameAsEncodingJSON: for any input, Unmarshal gives what
// encoding/json.Unmarshal gives (value and whether it failed, with its error
// text), Valid what json.Valid says, and DecodeAny what a UseNumber decoder
// gives.
func FuzzSameAsEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want envelope
		gotErr := wirejson.Unmarshal(b, &got)
		wantErr := json.Unmarshal(b, &want)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("%q: error %v, encoding/json says %v", b, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", b, got, want)
		}

		if got, want := wirejson.Valid(b), json.Valid(b); got != want {
			t.Fatalf("%q: Valid = %v, encoding/json says %v", b, got, want)
		}

		anyGot, anyErr := wirejson.DecodeAny(b)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var anyWant any
		decErr := dec.Decode(&anyWant)
		if (anyErr == nil) != (decErr == nil) || (decErr == nil && !reflect.DeepEqual(anyGot, anyWant)) {
			t.Fatalf("%q: DecodeAny = %#v, %v; decoder = %#v, %v", b, anyGot, anyErr, anyWant, decErr)
		}
	})
}

// TestRawValuesAreCopies: a raw value must not point into the input, whose
// buffer the reader reuses for the next line.
func TestRawValuesAreCopies(t *testing.T) {
	t.Parallel()
	in := []byte(seeds[0])
	var e envelope
	if err := wirejson.Unmarshal(in, &e); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	if string(e.Params.Arguments) != `{"text":"hi","n":[1,2.5e3,-0]}` || string(e.ID) != "1" || e.Method != "tools/call" {
		t.Fatalf("decoded values changed with the input: %+v", e)
	}
}

// BenchmarkDecode compares the two decoders on what a tools/call carries:
// the envelope (into raw values, as internal/rpc decodes it) and the
// arguments as the generic document schema validation needs.
func BenchmarkDecode(b *testing.B) {
	type message struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
	}
	line := []byte(seeds[0])
	args := []byte(`{"text":"ping {{var:x}}","vars":{"x":1},"items":[{"id":"step-001","description":"first"}]}`)
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"envelope/wirejson", func() error { var m message; return wirejson.Unmarshal(line, &m) }},
		{"envelope/encoding_json", func() error { var m message; return json.Unmarshal(line, &m) }},
		{"arguments/wirejson", func() error { _, err := wirejson.DecodeAny(args); return err }},
		{"arguments/encoding_json", func() error {
			dec := json.NewDecoder(bytes.NewReader(args))
			dec.UseNumber()
			var v any
			return dec.Decode(&v)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeepNestingIsRefused: a line of brackets gets encoding/json's error
// (it stops at 10,000 levels), never a deep recursion in the fast parser.
func TestDeepNestingIsRefused(t *testing.T) {
	t.Parallel()
	deep := bytes.Repeat([]byte(`{"a":`), 100000)
	var v any
	err := wirejson.Unmarshal(deep, &v)
	if err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Fatalf("got %v", err)
	}
	if _, err := wirejson.DecodeAny(append(bytes.Repeat([]byte("["), 20000), bytes.Repeat([]byte("]"), 20000)...)); err == nil {
		t.Fatal("20,000 levels decoded; encoding/json refuses them")
	}
	// Brackets inside strings do not count.
	var s struct{ A string }
	if err := wirejson.Unmarshal([]byte(`{"A":"`+strings.Repeat("[{", 1000)+`"}`), &s); err != nil || len(s.A) != 2000 {
		t.Fatalf("got %v, %d", err, len(s.A))
	}
}
