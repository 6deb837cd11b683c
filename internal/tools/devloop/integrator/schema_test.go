package integrator

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/internal/tool"
)

var update = flag.Bool("update", false, "rewrite testdata/schemas from the current tool definitions")

// TestGoldenSchemas keeps what the model sees under review: a tag edit that
// changes a schema shows up as a diff of testdata/schemas/<tool>.json.
func TestGoldenSchemas(t *testing.T) {
	t.Parallel()
	for _, tl := range []tool.Tool{PortPicker(), SpawnUnits(), HealthWait(), RunCase(), ParsePlaceholder(), CollectStderr()} {
		spec := tl.Spec()
		t.Run(spec.Name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			if err := enc.Encode(map[string]json.RawMessage{"inputSchema": spec.InputSchema, "outputSchema": spec.OutputSchema}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "schemas", spec.Name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenSchemas -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("schema of %s changed; review and run go test -run TestGoldenSchemas -update\ngot:\n%s", spec.Name, buf.Bytes())
			}
		})
	}
}
