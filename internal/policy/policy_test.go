package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

var stamp = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// put writes a policy with a distinct mtime per step, so the test never
// depends on the file system's timestamp resolution.
func put(t *testing.T, path, body string, step int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	mt := stamp.Add(time.Duration(step) * time.Second)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func timeoutOf(p *policy.Policy, name string) int { return p.Current().Tools[name].TimeoutMS }

func TestReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.json")
	logs := &testutil.SyncBuffer{}
	put(t, path, `{"tools":{"a":{"permission":"read","timeout_ms":1000}}}`, 1)
	p := policy.Load(path, zerolog.New(logs))
	if timeoutOf(p, "a") != 1000 {
		t.Fatalf("first load: %+v", p.Current())
	}
	held := p.Current()

	put(t, path, `{"tools":{"a":{"permission":"read","timeout_ms":2000}}}`, 2)
	if timeoutOf(p, "a") != 2000 {
		t.Fatal("mtime change not picked up")
	}
	if held.Tools["a"].TimeoutMS != 1000 {
		t.Fatal("a reload changed the *File a running call holds")
	}

	put(t, path, `{"tools":{"a":{"permission":"read","timeout_ms":"soon"}}}`, 3)
	if timeoutOf(p, "a") != 2000 || !strings.Contains(logs.String(), `"event":"tool_policy_invalid"`) {
		t.Fatalf("invalid file: policy %+v, logs %s", p.Current().Tools, logs.String())
	}
	put(t, path, `{"tools":{"a":{"permission":"read","timeout_ms":3000}},"surprise":1}`, 4)
	if timeoutOf(p, "a") != 2000 {
		t.Fatal("a file with an unknown field replaced the last good policy")
	}

	// Replaced by rename, as editors and config managers do.
	tmp := filepath.Join(dir, "tools.json.new")
	put(t, tmp, `{"tools":{"a":{"permission":"read","timeout_ms":4000}}}`, 5)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if timeoutOf(p, "a") != 4000 {
		t.Fatal("rename not picked up")
	}

	// Same size and mtime: not re-read (the check is a stat, not a read).
	put(t, path, `{"tools":{"a":{"permission":"read","timeout_ms":9000}}}`, 5)
	if timeoutOf(p, "a") != 4000 {
		t.Fatal("file re-read although neither mtime nor size changed")
	}
	// Only the size changes.
	put(t, path, `{"tools":{"a":{"permission":"read","timeout_ms":90000}}}`, 5)
	if timeoutOf(p, "a") != 90000 {
		t.Fatal("size change not picked up")
	}

	// Deleted: keep the last good policy.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if timeoutOf(p, "a") != 90000 {
		t.Fatal("a deleted file dropped the policy")
	}
}

func TestFirstLoadBroken(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"not JSON":      `{"tools":`,
		"wrong shape":   `{"tools":[]}`,
		"no tools":      `{}`,
		"negative":      `{"tools":{"a":{"permission":"read","timeout_ms":-1}}}`,
		"trailing data": `{"tools":{}} x`,
		"bad upstream":  `{"tools":{},"upstream":[{"name":"gh","transport":"carrier-pigeon"}]}`,
		"missing file":  "",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "tools.json")
			if body != "" {
				put(t, path, body, 1)
			}
			logs := &testutil.SyncBuffer{}
			p := policy.Load(path, zerolog.New(logs))
			if len(p.Current().Tools) != 0 || !strings.Contains(logs.String(), "tool_policy_invalid") {
				t.Fatalf("policy %+v logs %s", p.Current(), logs.String())
			}
			builtin := &tool.Spec{Name: "x", Effect: tool.ReadOnly, Source: "builtin"}
			upstream := &tool.Spec{Name: "gh_issue", Source: "mcp:gh"}
			if d := p.Current().Decide(builtin); d.Permission != policy.Read {
				t.Fatalf("built-in under an empty policy: %+v", d)
			}
			if d := p.Current().Decide(upstream); d.Allowed() {
				t.Fatalf("upstream under an empty policy: %+v", d)
			}
			// The file appears later: picked up.
			put(t, path, `{"tools":{"gh_issue":{"permission":"read"}}}`, 2)
			if !p.Current().Decide(upstream).Allowed() {
				t.Fatal("fixed file not picked up")
			}
		})
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	f, err := policy.Parse([]byte(`{"tools":{
		"r":{"permission":"read","timeout_ms":500,"max_retries":2},
		"w":{"permission":"write","max_retries":4,"confirm":true},
		"d":{"permission":"deny"},
		"odd":{"permission":"admin"},
		"up_listed":{"permission":"read"}
	},"confirm_ttl_ms":60000}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		spec tool.Spec
		want policy.Decision
	}{
		{"listed read", tool.Spec{Name: "r", Source: "builtin"},
			policy.Decision{Permission: policy.Read, Timeout: 500 * time.Millisecond, MaxRetries: 2, ConfirmTTL: time.Minute, Listed: true}},
		{"write never retries", tool.Spec{Name: "w", Source: "builtin", Timeout: 3 * time.Second},
			policy.Decision{Permission: policy.Write, Timeout: 3 * time.Second, Confirm: true, ConfirmTTL: time.Minute, Listed: true}},
		{"deny", tool.Spec{Name: "d", Source: "builtin"},
			policy.Decision{Permission: policy.Deny, Timeout: policy.DefaultTimeout, ConfirmTTL: time.Minute, Listed: true}},
		{"unknown permission means deny", tool.Spec{Name: "odd", Source: "builtin"},
			policy.Decision{Permission: policy.Deny, Timeout: policy.DefaultTimeout, ConfirmTTL: time.Minute, Listed: true}},
		{"unlisted built-in read-only tool", tool.Spec{Name: "new_read", Source: "builtin", Effect: tool.ReadOnly},
			policy.Decision{Permission: policy.Read, Timeout: policy.DefaultTimeout, ConfirmTTL: time.Minute}},
		{"unlisted built-in destructive tool", tool.Spec{Name: "new_write", Source: "builtin", Effect: tool.Destructive, Timeout: time.Second},
			policy.Decision{Permission: policy.Write, Timeout: time.Second, ConfirmTTL: time.Minute}},
		{"unlisted upstream tool is denied", tool.Spec{Name: "gh_delete", Source: "mcp:gh", Effect: tool.ReadOnly},
			policy.Decision{Permission: policy.Deny, Timeout: policy.DefaultTimeout}},
		{"listed upstream tool", tool.Spec{Name: "up_listed", Source: "mcp:gh"},
			policy.Decision{Permission: policy.Read, Timeout: policy.DefaultTimeout, ConfirmTTL: time.Minute, Listed: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := f.Decide(&tc.spec); got != tc.want {
				t.Fatalf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	cur, err := policy.Parse(configs.ToolsJSON)
	if err != nil {
		t.Fatal(err)
	}
	next, err := policy.Parse([]byte(`{"tools":{
		"write_todolist":{"permission":"write","timeout_ms":20000,"confirm":true},
		"timeline_append":{"permission":"write","timeout_ms":10000,"max_retries":3},
		"brand_new":{"permission":"read"},
		"weird":{"permission":"sudo"}
	},"upstream":[{"name":"gh","transport":"stdio","command":"gh-mcp"}],"confirm_ttl_ms":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range policy.Diff(cur, next) {
		lines = append(lines, c.String())
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"+ tool brand_new: permission read",
		"~ tool write_todolist: timeout_ms 10000 → 20000; confirm false → true",
		"~ tool timeline_append: max_retries 0 → 3",
		"- tool record_memory: was permission write",
		"+ upstream gh: stdio gh-mcp",
		"~ setting confirm_ttl_ms: 600000 → 1000",
		`! tool weird: permission "sudo" is not read, write or deny, so the tool is denied`,
		"! tool timeline_append: max_retries 3 is ignored: only read tools are retried",
	} {
		// Once: a tool in both files is one change, not one per file.
		if n := strings.Count(got, want); n != 1 {
			t.Errorf("diff has %q %d times, want once:\n%s", want, n, got)
		}
	}
	if d := policy.Diff(cur, cur); len(d) != 0 {
		t.Fatalf("a policy differs from itself: %v", d)
	}
}

// TestUpstreamSandbox: an upstream's sandbox is checked when the file is
// read, and an entry without one writes only its temp dir and connects and
// listens nowhere.
func TestUpstreamSandbox(t *testing.T) {
	t.Parallel()
	entry := func(sandbox string) []byte {
		return []byte(`{"tools":{},"upstream":[{"name":"u","transport":"stdio","command":"x"` + sandbox + `}]}`)
	}
	f, err := policy.Parse(entry(``))
	if err != nil {
		t.Fatal(err)
	}
	sb := f.Upstream[0].Sandbox.Agent()
	if sb.Commands != "require" || sb.Network.Connect.String() != "none" || sb.Network.Bind.String() != "none" || len(sb.WriteAllowList) != 0 || sb.ReadAllowList != nil {
		t.Fatalf("default sandbox %+v, want require, connect none, bind none, no writes, reads open", sb)
	}
	f, err = policy.Parse(entry(`,"sandbox":{"write":["/var/cache/u/**"],"connect":[443],"bind":"any","env":["GITHUB_*"],"commands":"best-effort"}`))
	if err != nil {
		t.Fatal(err)
	}
	if sb := f.Upstream[0].Sandbox.Agent(); sb.Network.Connect.String() != "443" || !sb.Network.Bind.Any || sb.Env[0] != "GITHUB_*" || sb.Commands != "best-effort" {
		t.Fatalf("sandbox %+v", sb)
	}
	for name, bad := range map[string]string{
		"unknown field":  `,"sandbox":{"writes":["/x"]}`,
		"own port":       `,"sandbox":{"connect":"own"}`,
		"bad mode":       `,"sandbox":{"commands":"sometimes"}`,
		"bad env":        `,"sandbox":{"env":["A=B"]}`,
		"bad pattern":    `,"sandbox":{"write":["[x"]}`,
		"port too large": `,"sandbox":{"bind":[70000]}`,
	} {
		if _, err := policy.Parse(entry(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
