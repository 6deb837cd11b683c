// Command mcpgo is mark3labs/mcp-go's one-tool echo server over stdio, the
// peer of toolhost's throughput figures in make bench, with the server's
// input schema validation on (WithInputSchemaValidation).
package main

import (
	"context"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type In struct {
	Text string         `json:"text" jsonschema:"required" jsonschema_description:"the text to echo"`
	Vars map[string]any `json:"vars,omitempty" jsonschema_description:"values, ignored"`
}

type Out struct {
	OK   bool   `json:"ok"`
	Text string `json:"text"`
}

func main() {
	s := server.NewMCPServer("echo", "1.0.0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("echoes text"), mcp.WithInputSchema[In](), mcp.WithOutputSchema[Out]()),
		mcp.NewStructuredToolHandler(func(_ context.Context, _ mcp.CallToolRequest, in In) (Out, error) {
			return Out{OK: true, Text: in.Text}, nil
		}))
	if err := server.ServeStdio(s); err != nil {
		log.Fatal(err)
	}
}
