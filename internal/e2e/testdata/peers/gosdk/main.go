// Command gosdk is the official MCP Go SDK's one-tool echo server over
// stdio, the peer of toolhost's start-up and memory figures in make bench.
// mcp.AddTool infers the input schema from In and validates every call's
// arguments against it before the handler runs.
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type In struct {
	Text string         `json:"text" jsonschema:"the text to echo"`
	Vars map[string]any `json:"vars,omitempty" jsonschema:"values, ignored"`
}

type Out struct {
	OK   bool   `json:"ok"`
	Text string `json:"text"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			return nil, Out{OK: true, Text: in.Text}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
