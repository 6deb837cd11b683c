package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestTypeScriptSDKClients drives the release binary with the official
// TypeScript client SDKs of both eras (testdata/tsclient/driver.mjs) over
// stdio and Streamable HTTP: @modelcontextprotocol/client 2.x settles on
// 2026-07-28 after its server/discover probe, @modelcontextprotocol/sdk
// 1.32 on 2025-11-25 through initialize. Each lists every page of tools,
// calls, gets a validation failure, and answers a confirmation accept,
// decline and cancel through its own elicitation handler.
func TestTypeScriptSDKClients(t *testing.T) {
	t.Parallel()
	deps := testutil.NeedDeps(t, ".deps/mcp-clients/node_modules/@modelcontextprotocol/client", "bash scripts/deps/50-mcp-sdk-clients.sh")
	modules := filepath.Dir(filepath.Dir(deps))
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (scripts/deps/50-mcp-sdk-clients.sh installs it)")
	}
	// The driver resolves the SDKs from a node_modules beside it.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "tsclient", "driver.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	driver := filepath.Join(dir, "driver.mjs")
	if err := os.WriteFile(driver, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	bin := testutil.Toolhost(t)
	for _, tc := range []struct{ sdk, transport, version string }{
		{"v2", "stdio", "2026-07-28"}, {"v2", "http", "2026-07-28"},
		{"v1", "stdio", "2025-11-25"}, {"v1", "http", "2025-11-25"},
	} {
		t.Run(tc.sdk+"/"+tc.transport, func(t *testing.T) {
			t.Parallel()
			project := t.TempDir()
			args := []string{"--agent", "tester", "--project-dir", project, "--page-size", "2", "--policy", confirmPolicyFile(t)}
			target := append([]string{bin, "serve"}, args...)
			log := func() string { return "" }
			token := ""
			if tc.transport == "http" {
				srv := testutil.ServeHTTP(t, bin, args...)
				target, log, token = []string{srv.URL}, srv.Log, srv.Token
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, append([]string{driver, tc.sdk, tc.transport}, target...)...)
			cmd.Env = append(os.Environ(), "DRIVER_BEARER_TOKEN="+token)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("driver: %v\n%s\n%s", err, out, log())
			}
			var got struct {
				Version string
				Tools   []string
				List    struct{ IsError bool }
				Bad     struct {
					IsError bool
					Text    string
				}
				Confirm []struct {
					IsError bool
					Text    string
				}
				Asked int
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("driver output is not JSON: %v\n%s", err, out)
			}
			if got.Version != tc.version {
				t.Errorf("%s settled on %q, want %q", tc.sdk, got.Version, tc.version)
			}
			if !contains(got.Tools, "bug_list") || !contains(got.Tools, "timeline_append") || contains(got.Tools, "write_chapter") {
				t.Errorf("tools over all pages: %v", got.Tools)
			}
			if got.List.IsError || !got.Bad.IsError || !strings.Contains(got.Bad.Text, "kind: must be string") {
				t.Errorf("calls: list %+v, bad %+v", got.List, got.Bad)
			}
			want := []struct {
				isError bool
				text    string
			}{{false, `"seq":1`}, {true, "declined by user"}, {true, "toolhost approve cf-"}}
			if len(got.Confirm) != 3 || got.Asked != 3 {
				t.Fatalf("confirmations %+v, asked %d times", got.Confirm, got.Asked)
			}
			for i, w := range want {
				if c := got.Confirm[i]; c.IsError != w.isError || !strings.Contains(c.Text, w.text) {
					t.Errorf("confirmation %d: %+v, want isError %v with %q", i, c, w.isError, w.text)
				}
			}
		})
	}
}
