package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/upstream/upstreamtest"
)

// TestDiscoveryNeverBlocksInitialize: with an upstream whose discovery
// hangs for its whole (long) timeout, initialize, server/discover and a
// built-in call are answered at once; only tools/list waits, bounded by
// the discovery timeout, and then lists the built-in tools.
func TestDiscoveryNeverBlocksInitialize(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, timeoutMS int) *stdioclient.Client {
		dir := t.TempDir()
		hang := policy.Upstream{Name: "fake", Transport: "stdio", Command: upstreamtest.FakeMCP(t),
			Env: map[string]string{"FAKEMCP_HANG": "1"}, DiscoveryTimeoutMS: timeoutMS}
		agentsFile, policyFile := upstreamtest.WriteConfigs(t, dir, nil, hang)
		project := filepath.Join(dir, "project")
		if err := os.MkdirAll(project, 0o755); err != nil {
			t.Fatal(err)
		}
		c, err := stdioclient.Start(testutil.Toolhost(t), []string{"serve", "--agent", "pm", "--project-dir", project,
			"--agents", agentsFile, "--policy", policyFile, "--grace", "1s"}, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(10 * time.Second) })
		return c
	}
	t.Run("initialize and calls", func(t *testing.T) {
		t.Parallel()
		c := start(t, 120_000)
		// Far inside the two-minute discovery timeout the server has to
		// sit out if it waited for discovery.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if _, err := c.Initialize(ctx, "2025-11-25", nil); err != nil {
			t.Fatalf("initialize waited for the hanging upstream: %v\n%s", err, c.Stderr())
		}
		if _, err := c.Call(ctx, "server/discover", map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}}); err != nil {
			t.Fatalf("server/discover: %v", err)
		}
		r, err := c.CallTool(ctx, "timeline_append", map[string]any{"kind": "k", "message": "before discovery ends"}, nil)
		if err != nil || r.IsError {
			t.Fatalf("a built-in call waited for discovery: %v %+v", err, r)
		}
	})
	t.Run("tools/list waits, bounded", func(t *testing.T) {
		t.Parallel()
		c := start(t, 1500)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		raw, err := c.Call(ctx, "tools/list", nil)
		if err != nil {
			t.Fatalf("tools/list: %v\n%s", err, c.Stderr())
		}
		var list struct{ Tools []struct{ Name string } }
		_ = json.Unmarshal(raw, &list)
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		if !strings.Contains(strings.Join(names, ","), "timeline_append") {
			t.Fatalf("tools/list after the discovery timed out: %v", names)
		}
	})
}
