package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

type noteInput struct {
	Text string `json:"text" jsonschema:"minLength=1" jsonschema_description:"what to note"`
}

type noteOutput struct {
	tool.Status
	Path string `json:"path,omitempty" jsonschema_description:"where the note went"`
}

type printSink struct{}

func (printSink) Write(r *audit.Row) error {
	fmt.Println("audit:", strings.TrimSpace(r.Tool+" "+string(r.Status)+" "+r.ErrorKind))
	return nil
}

// Every call goes through Engine.Call, whatever the transport: the agent's
// tool policy, the policy file, schema validation, the tool run with its
// deadline and retries, the classification and one audit row. Here a tool
// that writes through the sandbox door is called twice, once with
// arguments its schema refuses.
func ExampleEngine_Call() {
	dir, err := os.MkdirTemp("", "engine-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	note := tool.New(tool.Spec{Name: "note", Description: "Write a note.", Effect: tool.Additive},
		func(_ context.Context, c *callctx.Ctx, in noteInput) (noteOutput, error) {
			if err := c.Files.AppendFile("notes/log.txt", []byte(in.Text+"\n")); err != nil {
				return noteOutput{}, err
			}
			return noteOutput{Status: tool.Status{OK: true}, Path: "notes/log.txt"}, nil
		})
	reg := registry.New()
	reg.Add(note)
	ag := &agents.Agent{Name: "devloop-example", Short: "example"}
	ag.CLI.ToolPolicy = []string{"note"}
	files, err := sandbox.New(dir, ag.Name, []string{"notes/**"})
	if err != nil {
		panic(err)
	}
	defer files.Close()
	eng := &engine.Engine{
		Registry: reg, Agent: ag, Policy: policy.Load("", zerolog.Nop()), Audit: printSink{},
		Identity: callctx.Identity{Agent: ag.Short, AgentName: ag.Name, SessionID: "sess-1", ProjectDir: dir},
		Services: callctx.Services{Files: files, Clock: callctx.SystemClock{}, Log: zerolog.Nop()},
		Log:      zerolog.Nop(),
	}
	eng.Init()
	for _, args := range []string{`{"text":"first"}`, `{"text":""}`} {
		out := eng.Call(context.Background(), engine.Request{Tool: "note", Args: json.RawMessage(args)})
		if out.IsError {
			fmt.Println(out.Status, out.Kind, "→", out.Message)
			continue
		}
		fmt.Println(out.Status, string(out.Result.Structured))
	}
	// Output:
	// audit: note ok
	// ok {"ok":true,"path":"notes/log.txt"}
	// audit: note rejected validation
	// rejected validation → text: must be at least 1 characters long (is 0) — fix the arguments and call again
}
