package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	googleschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// suiteCase is one schema of the official JSON-Schema-Test-Suite with its
// instances.
type suiteCase struct {
	File        string
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

func loadSuite(t testing.TB) []suiteCase {
	t.Helper()
	files, err := filepath.Glob("testdata/JSON-Schema-Test-Suite/tests/draft2020-12/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no suite files: %v", err)
	}
	var all []suiteCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []suiteCase
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range cs {
			cs[i].File = strings.TrimSuffix(filepath.Base(f), ".json")
		}
		all = append(all, cs...)
	}
	return all
}

// candidate is a validator under comparison: compile returns a function
// that reports whether an instance is valid, or the compile error.
type candidate struct {
	name    string
	compile func(schema []byte) (func(data []byte) bool, error)
}

var candidates = []candidate{
	{"toolhost (internal/schema)", func(schema []byte) (func([]byte) bool, error) {
		s, err := Compile(schema)
		if err != nil {
			return nil, err
		}
		return func(data []byte) bool {
			v, err := wirejson.DecodeAny(data)
			return err == nil && s.Check(v) == nil
		}, nil
	}},
	{"santhosh-tekuri/jsonschema/v6", func(schema []byte) (func([]byte) bool, error) {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
		if err != nil {
			return nil, err
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("tool.json", doc); err != nil {
			return nil, err
		}
		s, err := c.Compile("tool.json")
		if err != nil {
			return nil, err
		}
		return func(data []byte) bool {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			return err == nil && s.Validate(v) == nil
		}, nil
	}},
	{"google/jsonschema-go", func(schema []byte) (func([]byte) bool, error) {
		var s googleschema.Schema
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, err
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			return nil, err
		}
		return func(data []byte) bool {
			var v any
			return json.Unmarshal(data, &v) == nil && rs.Validate(v) == nil
		}, nil
	}},
}

// TestSuite holds the validator to the official suite: every 2020-12 case
// kept in testdata that bears on tool schemas.
func TestSuite(t *testing.T) {
	t.Parallel()
	for _, sc := range loadSuite(t) {
		s, err := Compile(sc.Schema)
		if err != nil {
			t.Errorf("%s / %s: does not compile: %v", sc.File, sc.Description, err)
			continue
		}
		for _, tc := range sc.Tests {
			v, err := wirejson.DecodeAny(tc.Data)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Check(v) == nil; got != tc.Valid {
				t.Errorf("%s / %s / %s: valid = %v, want %v", sc.File, sc.Description, tc.Description, got, tc.Valid)
			}
		}
	}
}

// TestSuiteComparison runs the validators toolhost could use over the
// suite's 2020-12 cases that bear on tool schemas, in process, and logs per
// keyword file how many instances each judged as the suite says (a schema
// that does not compile counts all its instances as wrong; a panic counts
// as wrong). It holds the choice: toolhost's validator judges every
// instance right and no candidate judges more. (gojsonschema, the design
// card's choice, got 838 of 981 right on draft-07 rules and overflowed its
// stack, which no recover catches, on the anchor and ref files: hence the
// switch, and why it is no longer run here.)
//
//	go test -run TestSuiteComparison -v ./internal/schema
func TestSuiteComparison(t *testing.T) {
	t.Parallel()
	suite := loadSuite(t)
	var b strings.Builder
	b.WriteString("\nkeyword")
	for _, c := range candidates {
		b.WriteString(" | " + c.name)
	}
	type score struct{ right, total int }
	totals := make([]score, len(candidates))
	row := func(name string, scores []score) {
		b.WriteString("\n" + name)
		for _, s := range scores {
			b.WriteString(" | " + strconv.Itoa(s.right) + "/" + strconv.Itoa(s.total))
		}
	}
	for i := 0; i < len(suite); {
		file := suite[i].File
		scores := make([]score, len(candidates))
		for ; i < len(suite) && suite[i].File == file; i++ {
			for k, c := range candidates {
				valid, err := compileSafely(c, suite[i].Schema)
				for _, tc := range suite[i].Tests {
					scores[k].total++
					if err == nil && validSafely(valid, tc.Data) == tc.Valid {
						scores[k].right++
					}
				}
			}
		}
		row(file, scores)
		for k, s := range scores {
			totals[k].right += s.right
			totals[k].total += s.total
		}
	}
	row("all", totals)
	t.Log(b.String())
	if own := totals[0]; own.right != own.total {
		t.Errorf("toolhost's validator judged %d of %d instances right", own.right, own.total)
	}
	for i, s := range totals[1:] {
		if s.right > totals[0].right {
			t.Errorf("%s judged more instances right (%d) than toolhost's validator (%d)", candidates[i+1].name, s.right, totals[0].right)
		}
	}
}

func compileSafely(c candidate, schema []byte) (valid func([]byte) bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicErr{v}
		}
	}()
	return c.compile(schema)
}

func validSafely(valid func([]byte) bool, data []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return valid(data)
}

type panicErr struct{ v any }

func (p *panicErr) Error() string { return "panic" }
