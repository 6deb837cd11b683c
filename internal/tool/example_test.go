package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// GreetInput is the input of the example tool: its field tags become the
// JSON Schema the model reads.
type GreetInput struct {
	Name string `json:"name" jsonschema:"minLength=1,maxLength=100" jsonschema_description:"who to greet"`
}

// GreetOutput is its result: tool.Status gives every result ok and reason.
type GreetOutput struct {
	tool.Status
	Text string `json:"text,omitempty" jsonschema_description:"the greeting"`
}

// A tool is a typed function. An expected failure is tool.Fail (the model
// reads {ok:false, reason}); any other error is a system failure the engine
// explains to the model in its own words.
func ExampleNew() {
	greet := tool.New(tool.Spec{Name: "greet", Description: "Greet someone by name.", Effect: tool.ReadOnly},
		func(_ context.Context, _ *callctx.Ctx, in GreetInput) (GreetOutput, error) {
			if in.Name == "nobody" {
				return GreetOutput{}, tool.Fail(nil, "nobody is not a name; give the name of whom to greet")
			}
			return GreetOutput{Status: tool.Status{OK: true}, Text: "hello " + in.Name}, nil
		})
	fmt.Println(string(greet.Spec().InputSchema))
	for _, args := range []string{`{"name":"ada"}`, `{"name":"nobody"}`} {
		r, err := greet.Call(context.Background(), nil, json.RawMessage(args))
		fmt.Println(string(r.Structured), r.Failed, err)
	}
	// Output:
	// {"properties":{"name":{"type":"string","maxLength":100,"minLength":1,"description":"who to greet"}},"additionalProperties":false,"type":"object","required":["name"]}
	// {"ok":true,"text":"hello ada"} false <nil>
	// {"ok":false,"reason":"nobody is not a name; give the name of whom to greet"} true <nil>
}
