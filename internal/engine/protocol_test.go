package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// confirmPolicy writes the embedded policy with confirm: true on
// timeline_append.
func confirmPolicy(t *testing.T) string {
	t.Helper()
	f, err := policy.Parse(configs.ToolsJSON)
	if err != nil {
		t.Fatal(err)
	}
	r := f.Tools["timeline_append"]
	r.Confirm = true
	f.Tools["timeline_append"] = r
	b, _ := json.Marshal(f)
	p := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func serve(t *testing.T, dir string, extra ...string) *stdioclient.Client {
	t.Helper()
	args := append([]string{"serve", "--project-dir", dir, "--agent", "pm", "--session", "s1"}, extra...)
	c, err := stdioclient.Start(testutil.Toolhost(t), args, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(10 * time.Second) })
	return c
}

func auditRows(t *testing.T, dir string) []*audit.Row {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, audit.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, bad, err := audit.Read(f, audit.Filter{})
	if err != nil || bad != 0 {
		t.Fatalf("audit trail: %d bad lines, %v", bad, err)
	}
	return rows
}

func timeline(t *testing.T, dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "timeline.ndjson"))
	return string(b)
}

func TestElicitationThroughProtocol(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := serve(t, dir, "--policy", confirmPolicy(t))
	// The minute starts once the binary is built and started: building it
	// on a loaded machine took longer than that.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var asked []string
	answers := []string{"accept", "decline", "cancel"}
	c.OnRequest(func(method string, params json.RawMessage) (any, *stdioclient.RPCError) {
		mu.Lock()
		defer mu.Unlock()
		if method != "elicitation/create" {
			return nil, &stdioclient.RPCError{Code: -32601, Message: method}
		}
		asked = append(asked, string(params))
		a := answers[0]
		answers = answers[1:]
		if a == "accept" {
			return map[string]any{"action": a, "content": map[string]any{"confirm": true}}, nil
		}
		return map[string]any{"action": a}, nil
	})
	if _, err := c.Initialize(ctx, "2025-06-18", map[string]any{"elicitation": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		msg, answer string
		wantErr     string
	}{
		{"accepted entry", "accept", ""},
		{"declined entry", "decline", "declined by user"},
		// Nobody decided: the call waits for toolhost approve instead.
		{"cancelled entry", "cancel", "nobody decided in the client"},
		{"", "", "message"}, // invalid: never shown to the human
	}
	var pending string
	for _, tc := range cases {
		res, err := c.CallTool(ctx, "timeline_append", map[string]any{"kind": "test.confirm", "message": tc.msg}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError != (tc.wantErr != "") || !strings.Contains(res.Text(), tc.wantErr) {
			t.Fatalf("%q: isError=%t text=%q; want error %q", tc.msg, res.IsError, res.Text(), tc.wantErr)
		}
		if tc.answer == "cancel" {
			m := regexp.MustCompile(`toolhost approve (cf-\S+)`).FindStringSubmatch(res.Text())
			if m == nil {
				t.Fatalf("a cancelled confirmation must name the toolhost approve command: %s", res.Text())
			}
			pending = m[1]
		}
	}
	// The human approves out of band; the same call then runs without the
	// client being asked again.
	if out, err := exec.Command(testutil.Toolhost(t), "approve", pending, "--project-dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("toolhost approve: %v\n%s", err, out)
	}
	res, err := c.CallTool(ctx, "timeline_append", map[string]any{"kind": "test.confirm", "message": "cancelled entry"}, nil)
	if err != nil || res.IsError {
		t.Fatalf("the approved call: %v %s", err, res.Text())
	}
	mu.Lock()
	if len(asked) != 3 {
		t.Fatalf("asked %d times, want 3 (the invalid call must not be shown): %v", len(asked), asked)
	}
	var p struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	}
	if err := json.Unmarshal([]byte(asked[0]), &p); err != nil || !strings.Contains(p.Message, "timeline_append") ||
		!strings.Contains(p.Message, "accepted entry") || p.RequestedSchema["type"] != "object" {
		t.Fatalf("elicitation params %s (%v)", asked[0], err)
	}
	mu.Unlock()
	tl := timeline(t, dir)
	if !strings.Contains(tl, "accepted entry") || strings.Contains(tl, "declined entry") || strings.Count(tl, "cancelled entry") != 1 {
		t.Fatalf("timeline: %s", tl)
	}
	var got []string
	for _, r := range auditRows(t, dir) {
		got = append(got, string(r.Status)+"/"+r.ErrorKind)
	}
	if want := "ok/ rejected/user_declined rejected/needs_confirmation rejected/validation ok/"; strings.Join(got, " ") != want {
		t.Fatalf("audit %v, want %s", got, want)
	}
}

func runToolhost(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(testutil.Toolhost(t), args...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func needsConfirmationID(t *testing.T, res *stdioclient.ToolResult) string {
	t.Helper()
	text := res.Text()
	i := strings.Index(text, "{")
	var p struct {
		ID string `json:"confirmation_id"`
	}
	if !res.IsError || !strings.HasPrefix(text, "needs_confirmation") || i < 0 || json.Unmarshal([]byte(text[i:]), &p) != nil || p.ID == "" {
		t.Fatalf("want needs_confirmation with an id, got isError=%t %q", res.IsError, text)
	}
	return p.ID
}

func TestApprovalThroughProtocol(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := serve(t, dir, "--policy", confirmPolicy(t))
	// The minute starts once the binary is built and started: building it
	// on a loaded machine took longer than that.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A client that offers only URL-mode elicitation cannot show a form:
	// toolhost falls back to approve.
	if _, err := c.Initialize(ctx, "2025-11-25", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"kind": "test.approve", "message": "needs a human"}
	call := func() *stdioclient.ToolResult {
		res, err := c.CallTool(ctx, "timeline_append", args, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	id := needsConfirmationID(t, call())
	if strings.Contains(timeline(t, dir), "needs a human") {
		t.Fatal("ran before approval")
	}
	if out, code := runToolhost(t, "approve", id, "--project-dir", dir); code != 0 || !strings.Contains(out, "approved") {
		t.Fatalf("approve: exit %d: %s", code, out)
	}
	if res := call(); res.IsError {
		t.Fatalf("approved call failed: %s", res.Text())
	}
	second := needsConfirmationID(t, call())
	if second == id {
		t.Fatal("the used approval was offered again")
	}
	if out, code := runToolhost(t, "approve", id, "--project-dir", dir); code != 1 || !strings.Contains(out, "used") {
		t.Fatalf("re-approving a used confirmation: exit %d: %s", code, out)
	}
	if out, code := runToolhost(t, "approve", second, "--project-dir", dir, "--deny"); code != 0 || !strings.Contains(out, "denied") {
		t.Fatalf("deny: exit %d: %s", code, out)
	}
	if res := call(); !res.IsError || !strings.Contains(res.Text(), "denied by user") {
		t.Fatalf("denied call: %q", res.Text())
	}
	if out, code := runToolhost(t, "approve", "cf-nope", "--project-dir", dir); code != 1 || !strings.Contains(out, "no confirmation cf-nope") {
		t.Fatalf("unknown id: exit %d: %s", code, out)
	}
	if n := strings.Count(timeline(t, dir), "needs a human"); n != 1 {
		t.Fatalf("the call ran %d times, want 1", n)
	}
}

// TestConcurrentAuditFromProcesses runs six toolhost processes (one per
// agent, as in a devloop) appending to one project's audit trail at once,
// with rows far larger than a pipe buffer, and expects every row whole and
// one hash chain over them that verifies.
func TestConcurrentAuditFromProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const procs, calls = 6, 25
	blob := strings.Repeat("z", 16<<10)
	var wg sync.WaitGroup
	for p := range procs {
		c := serve(t, dir, "--session", fmt.Sprintf("s%d", p))
		if _, err := c.Initialize(ctx, "2025-06-18", nil); err != nil {
			t.Fatal(err)
		}
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.CallTool(ctx, "timeline_append",
					map[string]any{"kind": "load", "message": fmt.Sprintf("p%d-%d", p, i), "data": map[string]any{"blob": blob}},
					map[string]any{"call_id": fmt.Sprintf("p%d-c%d", p, i)})
				if err != nil || res.IsError {
					t.Errorf("call: %v %+v", err, res)
				}
			}()
		}
	}
	wg.Wait()
	f, err := os.Open(filepath.Join(dir, audit.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	seen := map[string]bool{}
	for sc.Scan() {
		var r struct {
			audit.Row
			Chain *audit.ChainRecord
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("torn or interleaved line (%d bytes): %v", len(sc.Bytes()), err)
		}
		if r.Chain != nil {
			continue // the chain's own record
		}
		if r.Status != audit.StatusOK || !strings.Contains(string(r.Arguments), blob) {
			t.Fatalf("row %s: status %s, arguments %d bytes", r.CallID, r.Status, len(r.Arguments))
		}
		seen[r.CallID] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != procs*calls {
		t.Fatalf("%d distinct rows, want %d", len(seen), procs*calls)
	}
	// The six processes kept one hash chain.
	v, err := audit.Verify(dir)
	if err != nil || v.Problem != nil || v.Rows != procs*calls {
		t.Fatalf("audit verify: %v %+v, %d rows", err, v.Problem, v.Rows)
	}
}
