package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/upstream/upstreamtest"
)

func TestUpstreamList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	web := upstreamtest.StartHTTPFake(t, "127.0.0.1:0")
	_, policyFile := upstreamtest.WriteConfigs(t, dir, map[string]policy.Rule{
		"fake__echo": {Permission: policy.Read}, "web__update": {Permission: policy.Write},
	},
		policy.Upstream{Name: "fake", Transport: "stdio", Command: upstreamtest.FakeMCP(t), DiscoveryTimeoutMS: 10000},
		policy.Upstream{Name: "web", Transport: "http", URL: web.URL},
		policy.Upstream{Name: "gone", Transport: "http", URL: "http://" + upstreamtest.FreeAddr(t) + "/mcp", DiscoveryTimeoutMS: 5000},
	)
	var out bytes.Buffer
	var errb testutil.SyncBuffer
	if code := Run([]string{"upstream", "list", "--policy", policyFile, "--json"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Upstreams []struct {
			Name      string `json:"name"`
			State     string `json:"state"`
			LastError string `json:"last_error"`
			Tools     []struct {
				Name       string `json:"name"`
				Served     bool   `json:"served"`
				Reason     string `json:"reason"`
				Permission string `json:"permission"`
			} `json:"tools"`
		} `json:"upstreams"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got.Upstreams) != 3 || got.Upstreams[0].Name != "fake" || got.Upstreams[1].Name != "web" || got.Upstreams[2].Name != "gone" {
		t.Fatalf("upstreams not in policy order: %s", out.String())
	}
	perm := map[string]string{}
	for _, u := range got.Upstreams {
		for _, tl := range u.Tools {
			perm[tl.Name] = tl.Permission
			if tl.Name == "fake__broken_schema" && (tl.Served || tl.Reason == "") {
				t.Errorf("broken_schema should be unavailable with a reason: %+v", tl)
			}
		}
	}
	cases := map[string]string{"fake__echo": "read", "web__update": "write", "web__lookup": "deny (not listed in the policy)"}
	for name, want := range cases {
		if perm[name] != want {
			t.Errorf("%s permission %q, want %q", name, perm[name], want)
		}
	}
	if g := got.Upstreams[2]; g.State != "failed" || !strings.Contains(g.LastError, "connect") {
		t.Errorf("gone: %+v, want failed with the connection error", g)
	}
	if got.Upstreams[0].State != "ready" || got.Upstreams[1].State != "ready" {
		t.Errorf("fake/web not ready: %s", out.String())
	}

	out.Reset()
	if code := Run([]string{"upstream", "list", "--policy", policyFile}, nil, &out, &errb); code != 0 {
		t.Fatalf("table: exit %d", code)
	}
	for _, want := range []string{"fake", "ready", "fake__echo", "(echo)", "gone", "failed", "last error:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table misses %q:\n%s", want, out.String())
		}
	}
}

func TestUpstreamApproveUsage(t *testing.T) {
	t.Setenv("TOOLHOST_PROJECT_DIR", "")
	var out bytes.Buffer
	var errb testutil.SyncBuffer
	if code := Run([]string{"upstream", "approve", "fake__echo"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--project-dir is required") {
		t.Fatalf("without a project: exit %d, %s", code, errb.String())
	}
	dir := t.TempDir()
	errb = testutil.SyncBuffer{}
	if code := Run([]string{"upstream", "approve", "fake__echo", "--project-dir", dir}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "nothing waits for approval") {
		t.Fatalf("nothing withheld: exit %d, %s", code, errb.String())
	}
}
