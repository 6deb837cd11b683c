package sandbox

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzIndent holds indent to json.Indent's output on whatever compact
// document json.Marshal makes of a decoded input.
func FuzzIndent(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[],"b":{},"c":[{}],"d":""}`, `{"k":"v\"}{[],:","n":-1.5e-7,"t":true,"z":null}`,
		`[1,[2,[3,{"x":[4]}]],"\\",{"":""}]`, `"\u2028<>&"`, `{"a":{"b":{"c":{"d":[[[[]]]]}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var v any
		if json.Unmarshal(in, &v) != nil {
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) != nil {
			return
		}
		compact := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indent(nil, compact); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("indent(%s)\n got %s\nwant %s", compact, got, want.Bytes())
		}
	})
}
