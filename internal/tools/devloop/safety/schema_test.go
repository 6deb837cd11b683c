package safety

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/internal/tool"
)

var update = flag.Bool("update", false, "rewrite the golden schemas in testdata/schemas")

// TestGoldenSchemas keeps what the model sees under review: a tag edit that
// changes a tool's input or output schema shows up as a diff of
// testdata/schemas/<tool>.json (regenerate with go test -update).
func TestGoldenSchemas(t *testing.T) {
	for _, tl := range []tool.Tool{Bash(), SandboxCheck()} {
		spec := tl.Spec()
		var buf bytes.Buffer
		doc := map[string]json.RawMessage{"inputSchema": spec.InputSchema, "outputSchema": spec.OutputSchema}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			t.Fatal(err)
		}
		buf.WriteByte('\n')
		golden := filepath.Join("testdata", "schemas", spec.Name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(want, buf.Bytes()) {
			t.Errorf("%s schema changed; review and run go test -update:\n%s", spec.Name, buf.Bytes())
		}
	}
}
