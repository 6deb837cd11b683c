package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// secretKinds are fake credentials of each kind issue 22 names, as they
// appear in an agent's text; secret is what must not reach the disk.
// They are assembled from pieces so that no scanner flags this file.
var secretKinds = []struct {
	kind, text, secret string
}{
	{"bearer", "Authorization: Bearer tok3n.bearer-9f8e7d", "tok3n.bearer-9f8e7d"},
	{"api key in a command line", "curl -H 'X-Api-Key: key-cmdline-4711' https://api.example.com", "key-cmdline-4711"},
	{"api key option", "deploy --api-key apikey-opt-0815 now", "apikey-opt-0815"},
	{"url userinfo", "postgres://app:" + "userinfo-pw-42@db.internal:5432/app", "userinfo-pw-42"},
	{"DB_PASS", "DB_PASS=dbpass-" + "value-1", "dbpass-value-1"},
	{"pin lower", "pin=98" + "7654", "987654"},
	{"PIN upper", "PIN: 55" + "6677", "556677"},
	{"secret_key any case", "Secret_Key=secretkey-" + "xyz", "secretkey-xyz"},
	{"github", "ghp_" + strings.Repeat("Gh1t", 9), "ghp_" + strings.Repeat("Gh1t", 9)},
	{"anthropic", "sk-ant-api03-" + strings.Repeat("An7h", 8), "sk-ant-api03-" + strings.Repeat("An7h", 8)},
	{"openai", "sk-proj-" + strings.Repeat("Op3n", 8), "sk-proj-" + strings.Repeat("Op3n", 8)},
	{"aws", "AKIA" + "ZZZZEXAMPLE12345", "AKIA" + "ZZZZEXAMPLE12345"},
	{"slack", "xoxb-" + "2222-3333-" + strings.Repeat("Sl4k", 5), "xoxb-" + "2222-3333-" + strings.Repeat("Sl4k", 5)},
	{"jwt", "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJlMmUifQ." + "c2lnbmF0dXJlLWUyZS10ZXN0", "eyJzdWIiOiJlMmUifQ"},
}

// TestRedactionOnDisk puts every kind of secret into each place toolhost
// writes about a call — an audit row (arguments and the refusal message),
// the log on stderr, the timeline and events, a run_case run record (URL,
// captured variables, diff and response excerpt), the runtime state — through
// the real binary, then reads every file of the project: no secret is left.
func TestRedactionOnDisk(t *testing.T) {
	t.Parallel()
	var all []string
	for _, s := range secretKinds {
		all = append(all, s.text)
	}
	blob := strings.Join(all, " ; ")
	token := secretKinds[len(secretKinds)-1].text
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"token":%q,"note":%q}`, token, blob)
	}))
	defer sink.Close()

	proj := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proj, "units", "u"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := testutil.Serve(t, "--project-dir", proj, "--agent", "devloop-integrator", "--session", "s-redact", "--unit", "u")
	// An audit row: the arguments and, refused by the guard, the message
	// that quotes the command.
	refused := "curl -d '{\"a\":1}' -H " + shellQuote("X: "+blob) + " http://127.0.0.1:9/"
	r := testutil.CallTool(t, c, "bash", map[string]any{"command": refused})
	if !r.IsError {
		t.Fatalf("bash with inline JSON was not refused: %s", r.Text())
	}
	testutil.CallTool(t, c, "bash", map[string]any{"command": "echo " + shellQuote(blob) + " >/dev/null"})
	// The timeline and events.
	testutil.ResultOK(t, "timeline_append", testutil.CallTool(t, c, "timeline_append", map[string]any{
		"kind": "test.secret", "message": blob, "data": map[string]any{"password": "data-pw-1", "note": blob, "Pin": 1234}}), nil)
	// The runtime state.
	testutil.ResultOK(t, "update_runtime_state", testutil.CallTool(t, c, "update_runtime_state", map[string]any{
		"phase": "test", "message": blob, "data": map[string]any{"DB_PASS": "state-pw-2", "env": blob}}), nil)
	// A run record: a URL with userinfo and a token query, a header, a
	// captured token, and a failing expectation that keeps the response.
	base := strings.Replace(sink.URL, "http://", "http://runuser:"+"userinfo-pw-42@", 1)
	res := testutil.CallTool(t, c, "run_case", map[string]any{"case": map[string]any{"id": "secret", "steps": []any{
		map[string]any{"name": "login", "method": "POST", "url": base + "/login?access_token=query-tok-77",
			"headers": map[string]any{"Authorization": "Bearer tok3n.bearer-9f8e7d"},
			"body":    map[string]any{"password": "body-pw-3", "note": blob},
			"expect":  map[string]any{"status": 200}, "capture": map[string]any{"tok": "/token"}},
		map[string]any{"name": "use", "method": "GET", "url": sink.URL + "/me?t={{var:tok}}",
			"expect": map[string]any{"status": 201}},
	}}})
	if res.IsError {
		t.Fatalf("run_case: %s", res.Text())
	}
	if err := c.Close(20e9); err != nil {
		t.Fatalf("close: %v", err)
	}
	// The log on stderr: the hook logs its decision with the reason.
	hook := exec.Command(testutil.Toolhost(t), "hook", "pretooluse", "--agent", "devloop-integrator", "--project-dir", proj)
	payload, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": refused}})
	hook.Stdin = bytes.NewReader(payload)
	var logs bytes.Buffer
	hook.Stderr = &logs
	if err := hook.Run(); err != nil {
		t.Fatalf("hook: %v", err)
	}
	if !strings.Contains(logs.String(), `"event":"hook_decision"`) {
		t.Fatalf("no decision logged: %s", logs.String())
	}

	places := map[string]string{"the hook's log on stderr": logs.String(), "the server's log on stderr": c.Stderr()}
	wantFiles := []string{".toolhost/audit.ndjson", "timeline.ndjson", ".toolhost/events.ndjson", "agent-state/integrator-runtime.json"}
	err := filepath.WalkDir(proj, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(proj, p)
		places[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var runs int
	for p := range places {
		if strings.HasPrefix(p, "integration/runs/") {
			runs++
		}
	}
	if runs != 1 {
		t.Fatalf("%d run records, want 1", runs)
	}
	for _, f := range wantFiles {
		if _, ok := places[f]; !ok {
			t.Fatalf("%s was not written", f)
		}
	}
	secrets := []string{"data-pw-1", "state-pw-2", "body-pw-3", "query-tok-77"}
	for _, s := range secretKinds {
		secrets = append(secrets, s.secret)
	}
	for place, text := range places {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s keeps the secret %q", place, s)
			}
		}
	}
	for _, f := range append(wantFiles, "the hook's log on stderr") {
		if !strings.Contains(places[f], "[REDACTED]") {
			t.Errorf("%s shows no redaction:\n%s", f, places[f])
		}
	}
}

// shellQuote quotes s for bash in single quotes.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
