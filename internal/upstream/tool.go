package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/tool"
)

// remoteTool is one upstream tool as toolhost serves it.
type remoteTool struct {
	spec tool.Spec
	conn *conn
}

func (t *remoteTool) Spec() *tool.Spec { return &t.spec }

// Call forwards the (already validated) arguments and passes the upstream's
// result through unchanged: content, structuredContent and isError.
func (t *remoteTool) Call(ctx context.Context, _ *callctx.Ctx, args json.RawMessage) (tool.Result, error) {
	res, err := t.conn.call(ctx, t.spec.Remote, args)
	if err != nil {
		return tool.Result{}, err
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return tool.Result{}, fmt.Errorf("encode result of upstream tool %s: %w", t.spec.Name, err)
	}
	r := tool.Result{Raw: raw, UpstreamError: res.IsError}
	if res.StructuredContent != nil {
		r.Structured, _ = json.Marshal(res.StructuredContent)
	}
	if res.IsError {
		r.Reason = resultText(res)
	}
	return r, nil
}

// resultText is the text of a result's content, cut for the audit row.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	s := strings.Join(parts, "\n")
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	if s == "" {
		s = "upstream reported an error without text"
	}
	return s
}

// newRemoteTool builds the served tool name (see ToolName) for an upstream
// tool under the policy f. The effect (and so readOnlyHint/destructiveHint)
// comes from the policy, never from the upstream's own annotations: read
// only when the policy says read, otherwise treated as destructive.
func newRemoteTool(name string, cfg policy.Upstream, c *conn, t *mcp.Tool, f *policy.File) (*remoteTool, error) {
	in, err := schemaFor(t.InputSchema, true)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var out json.RawMessage
	if t.OutputSchema != nil {
		if out, err = schemaFor(t.OutputSchema, false); err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	spec := tool.Spec{
		Name: name, Title: title, Description: t.Description, Source: "mcp:" + cfg.Name, Remote: t.Name,
		InputSchema: in, OutputSchema: out, Effect: tool.Destructive,
	}
	if cfg.CallTimeoutMS > 0 {
		spec.Timeout = time.Duration(cfg.CallTimeoutMS) * time.Millisecond
	}
	if f != nil && f.Decide(&spec).Permission == policy.Read {
		spec.Effect = tool.ReadOnly
	}
	return &remoteTool{spec: spec, conn: c}, nil
}

// knownDraft reports whether the validator knows a $schema value (drafts 4,
// 6, 7, 2019-09 and 2020-12); any other marker is dropped and the schema
// validated as 2020-12, MCP's default dialect, instead of failing to
// compile for want of a meta-schema no one may fetch.
func knownDraft(d string) bool {
	d = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(d, "https://"), "http://"), "#")
	switch d {
	case "json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-07/schema",
		"json-schema.org/draft/2019-09/schema", "json-schema.org/draft/2020-12/schema":
		return true
	}
	return false
}

// schemaFor re-encodes an upstream schema for the registry; an input schema
// must be an object schema, as MCP requires.
func schemaFor(v any, input bool) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	if d, ok := m["$schema"].(string); ok && !knownDraft(d) {
		delete(m, "$schema")
	}
	if input && m["type"] != "object" {
		return nil, fmt.Errorf(`"type" must be "object", not %v`, m["type"])
	}
	return json.Marshal(m)
}
