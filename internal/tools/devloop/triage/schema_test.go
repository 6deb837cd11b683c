package triage

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/internal/tool"
)

var update = flag.Bool("update", false, "rewrite testdata/schemas/*.json from the tools' generated schemas")

// The schemas the model sees are reviewed like code: a tag edit that
// changes them shows up as a diff of testdata/schemas (go test -update).
func TestGoldenSchemas(t *testing.T) {
	for _, tl := range []tool.Tool{ExtractEvidence(), VerifyEvidence(), CategoryClassifier(), DiffContractVsImpl(), FindSimilarBug()} {
		s := tl.Spec()
		t.Run(s.Name, func(t *testing.T) {
			var doc bytes.Buffer
			v := map[string]json.RawMessage{"inputSchema": s.InputSchema, "outputSchema": s.OutputSchema}
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			doc.Write(b)
			doc.WriteByte('\n')
			p := filepath.Join("testdata", "schemas", s.Name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, doc.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(want, doc.Bytes()) {
				t.Errorf("schema of %s changed; review and run go test -update:\n%s", s.Name, doc.Bytes())
			}
		})
	}
}
