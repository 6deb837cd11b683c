package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	googleschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/xeipuuv/gojsonschema"

	"github.com/toolhost/toolhost/internal/wirejson"
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
	{"gojsonschema (draft-07)", func(schema []byte) (func([]byte) bool, error) {
		s, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schema))
		if err != nil {
			return nil, err
		}
		return func(data []byte) bool {
			r, err := s.Validate(gojsonschema.NewBytesLoader(data))
			return err == nil && r.Valid()
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

// TestSuiteComparison runs every candidate over the suite's 2020-12 cases
// that bear on tool schemas and logs, per keyword file, how many instances
// each judged as the suite says (a schema that does not compile counts all
// its instances as wrong). Each candidate runs each file in a child process:
// gojsonschema overflows its stack, which no recover catches, on some.
//
//	go test -run TestSuiteComparison -v ./internal/registry
func TestSuiteComparison(t *testing.T) {
	suite := loadSuite(t)
	if one := os.Getenv("SUITE_ONE"); one != "" {
		ci, file, _ := strings.Cut(one, ":")
		c := candidates[ci[0]-'0']
		right, total := 0, 0
		for _, sc := range suite {
			if sc.File != file {
				continue
			}
			valid, err := compileSafely(c, sc.Schema)
			for _, tc := range sc.Tests {
				total++
				if err == nil && validSafely(valid, tc.Data) == tc.Valid {
					right++
				}
			}
		}
		fmt.Printf("SCORE %d %d\n", right, total)
		return
	}
	var files []string
	for _, sc := range suite {
		if len(files) == 0 || files[len(files)-1] != sc.File {
			files = append(files, sc.File)
		}
	}
	var b strings.Builder
	b.WriteString("\nkeyword")
	for _, c := range candidates {
		b.WriteString(" | " + c.name)
	}
	type score struct{ right, total int }
	totals := make([]score, len(candidates))
	for _, f := range files {
		b.WriteString("\n" + f)
		for i := range candidates {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteComparison$")
			cmd.Env = append(os.Environ(), "SUITE_ONE="+strconv.Itoa(i)+":"+f)
			out, _ := cmd.Output()
			var s score
			if k := bytes.Index(out, []byte("SCORE ")); k >= 0 {
				_, _ = fmt.Sscanf(string(out[k:]), "SCORE %d %d", &s.right, &s.total)
				b.WriteString(" | " + strconv.Itoa(s.right) + "/" + strconv.Itoa(s.total))
			} else {
				b.WriteString(" | crashed")
			}
			totals[i].right += s.right
			totals[i].total += s.total
		}
	}
	b.WriteString("\nall (crashed files count 0/0)")
	for _, s := range totals {
		b.WriteString(" | " + strconv.Itoa(s.right) + "/" + strconv.Itoa(s.total))
	}
	t.Log(b.String())
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
