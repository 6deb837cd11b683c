package schema

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// Schema is a compiled JSON Schema.
type Schema struct{ s *jsonschema.Schema }

// url is where a compiled schema says it came from; a tool's schema is one
// self-contained document.
const url = "toolhost:///schema.json"

// Compile compiles a JSON Schema: 2020-12 unless its $schema names an
// earlier draft. The schema is checked against its dialect's meta-schema;
// "format" is an annotation, as 2020-12 says; references resolve only
// inside the schema.
func Compile(doc json.RawMessage) (*Schema, error) {
	v, err := wirejson.DecodeAny(doc)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(url, v); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	return &Schema{s: s}, nil
}

// noLoader refuses every URL a schema refers to outside itself.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s: a tool schema may refer only to itself", u)
}

// Check validates a document in the generic form wirejson.DecodeAny gives
// (numbers as json.Number). It returns nil, or a *tool.ValidationError whose
// Reason names each path and the rule broken there.
func (s *Schema) Check(doc any) error {
	err := s.s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return violation(ve)
	}
	return &tool.ValidationError{Field: "(root)", Reason: err.Error()}
}
