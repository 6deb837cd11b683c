package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/testutil"
)

// dashboardProc is `toolhost dashboard` running for one test, its terminal
// (stdout) read line by line.
type dashboardProc struct {
	url   string
	codes chan string
	pid   int
}

var codeLine = regexp.MustCompile(`enter the code ([0-9A-Z]{5}-[0-9A-Z]{5}) there`)

func startDashboard(t *testing.T, env []string, args ...string) *dashboardProc {
	t.Helper()
	cmd := exec.Command(testutil.Toolhost(t), append([]string{"dashboard", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	d := &dashboardProc{codes: make(chan string, 64), pid: cmd.Process.Pid}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "toolhost dashboard: http"); ok {
				urls <- "http" + u
			}
			if m := codeLine.FindStringSubmatch(sc.Text()); m != nil {
				d.codes <- m[1]
			}
		}
	}()
	select {
	case d.url = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatal("the dashboard printed no URL")
	}
	return d
}

// latestCode is the newest code printed on the dashboard's terminal.
func (d *dashboardProc) latestCode(t *testing.T) string {
	t.Helper()
	c := <-d.codes
	for {
		select {
		case c = <-d.codes:
		case <-time.After(200 * time.Millisecond):
			return c
		}
	}
}

func confirmationStatus(t *testing.T, project, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(project, confirm.Path))
	if err != nil {
		t.Fatal(err)
	}
	var f confirm.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, e := range f.Confirmations {
		if e.ID == id {
			return e.Status
		}
	}
	return "missing"
}

// TestConfinedCommandCannotDecide: with a real `toolhost dashboard` and a
// PM's real `serve --http` running on the project, a command run by the
// coder's (confined) bash tool tries every route to decide for the human or
// to act as another agent — the page's token, the sign-in by guessing,
// /proc of every process (argv, environment), the HTTP server without a
// token or with every token-shaped string it found,
// as a 2026-07-28 client answering its own InputRequiredResult, `toolhost
// approve` and a dashboard of its own — and the effect is checked: the
// PM's confirmation is still pending, the PM's memory and timeline hold
// nothing of the attack. Then the human's own ways work: the code from the
// dashboard's terminal signs the browser in and Approve lets the PM's call
// run; the PM's client with its token calls the server.
func TestConfinedCommandCannotDecide(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	secretsEnv := "TOOLHOST_SECRETS_DIR=" + filepath.Join(t.TempDir(), "secrets")
	policy := policyFile(t, `{"tools":{"record_memory":{"confirm":true}}}`)
	env := []string{secretsEnv, "HOME=" + t.TempDir()}

	pm := testutil.ServeEnv(t, append(os.Environ(), env...), "--project-dir", project, "--agent", "pm", "--session", "sess-pm", "--policy", policy)
	ask := testutil.CallTool(t, pm, "record_memory", map[string]any{"key": "human-only", "content": "decided by a human"})
	id := regexp.MustCompile(`cf-[0-9A-Z]+`).FindString(ask.Text())
	if !ask.IsError || id == "" {
		t.Fatalf("record_memory did not wait for a human: %s", ask.Text())
	}
	dash := startDashboard(t, env, "--project-dir", project, "--policy", policy)
	httpPM := testutil.ServeHTTPEnv(t, testutil.Toolhost(t), env, "--agent", "pm", "--project-dir", project, "--policy", policy)
	if err := os.MkdirAll(filepath.Join(project, "units/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	coder := testutil.ServeEnv(t, append(os.Environ(), env...), "--project-dir", project, "--agent", "coder", "--session", "sess-coder", "--unit", "a")

	D, H := strings.TrimSuffix(dash.url, "/"), httpPM.URL
	// The attack is a Python script the agent writes and runs with its
	// bash tool (confined); it prints what it sees, and its effect is what
	// the test judges.
	script := `import glob, json, os, re, subprocess, time, urllib.request, http.cookiejar
D, H, ID, P, BIN = %q, %q, %q, %q, %q

def req(url, body=None, headers=None, opener=None):
    r = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers or {})
    try:
        with (opener or urllib.request.build_opener()).open(r, timeout=5) as f:
            return f.status, f.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except Exception as e:
        return 0, str(e)

js = {"Content-Type": "application/json", "Origin": D}
# 1. the page's token, tried as every credential
st, page = req(D + "/")
m = re.search(r'name="toolhost-token" content="([^"]*)"', page)
tok = m.group(1) if m else ""
print("page token:", repr(tok))
for cookie in ["toolhost_session=" + tok, "toolhost_dashboard=" + tok, ""]:
    print("approve with page token:", req(D + "/api/confirmations/" + ID + "/approve", {}, dict(js, **{"X-Toolhost-Page-Token": tok, "Cookie": cookie, "Authorization": "Bearer " + tok}))[0])
# 2. guessing the code
jar = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
for guess in ["0000000000", "AAAAAAAAAA", "ZZZZZ-ZZZZZ"] * 4:
    st, _ = req(D + "/api/session", {"code": guess}, js, jar)
print("last guess:", st, "then approve:", req(D + "/api/confirmations/" + ID + "/approve", {}, dict(js, **{"X-Toolhost-Page-Token": tok}), jar)[0])
# 3. /proc of every process (the secrets directory itself is the
# confinement's to hide: its own e2e test reads it from every source)
loot = ""
for d in glob.glob("/proc/[0-9]*"):
    for f in ("cmdline", "environ"):
        try:
            loot += open(d + "/" + f, "rb").read().decode(errors="replace").replace("\0", "\n") + "\n"
        except Exception:
            pass
cands = sorted(set(re.findall(r"[A-Za-z0-9_-]{40,}", loot)))
print("token-shaped strings found:", len(cands))
# 4. the PM's HTTP server with every candidate, and with none
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
def mcp(tool, args, auth=None, extra=None):
    params = {"name": tool, "arguments": args, "_meta": meta}
    params.update(extra or {})
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
    if auth:
        h["Authorization"] = "Bearer " + auth
    return req(H, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, h)
ok = [c for c in cands if mcp("timeline_append", {"kind": "attack", "message": "with a stolen token"}, c)[0] == 200]
print("candidates the server took:", len(ok))
print("without a token:", mcp("timeline_append", {"kind": "attack", "message": "without a token"})[0])
# 5. a 2026-07-28 client answering its own confirmation question
st, body = mcp("record_memory", {"key": "self-approved", "content": "x"})
m = re.search(r'"requestState":"([^"]*)"', body)
print("ask:", st, "state:", bool(m))
print("self-answer:", mcp("record_memory", {"key": "self-approved", "content": "x"}, None,
      {"inputResponses": {"confirm": {"action": "accept", "content": {"confirm": True}}}, "requestState": m.group(1) if m else "x"})[0])
# 6. the human's own commands, from inside
for argv in ([BIN, "approve", ID, "--project-dir", P], [BIN, "mcp-config", "--agent", "pm", "--project-dir", P, "--http-headers"]):
    r = subprocess.run(argv, capture_output=True, text=True)
    print(argv[1], "exit", r.returncode, (r.stdout + r.stderr).strip()[-200:])
# 7. a dashboard of its own, whose code it reads
d = subprocess.Popen([BIN, "dashboard", "--project-dir", P, "--addr", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
url = code = None
for _ in range(4):
    line = d.stdout.readline()
    m1 = re.match(r"toolhost dashboard: (http\S+)$", line.strip())
    m2 = re.search(r"enter the code (\S+) there", line)
    url = url or (m1 and m1.group(1))
    code = code or (m2 and m2.group(1))
    if url and code:
        break
print("own dashboard:", url, code)
if url and code:
    jar2 = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    st, body = req(url + "api/session", {"code": code}, {"Content-Type": "application/json"}, jar2)
    t2 = json.loads(body).get("token", "") if st == 200 else ""
    print("own sign-in:", st, "approve through it:", req(url + "api/confirmations/" + ID + "/approve", {}, {"Content-Type": "application/json", "X-Toolhost-Page-Token": t2}, jar2))
d.terminate()
`
	script = fmt.Sprintf(script, D, H, id, project, testutil.Toolhost(t))
	// The agent could write it itself (units/ is the coder's); the test
	// puts it there to keep the command short for the guard.
	if err := os.WriteFile(filepath.Join(project, "units/a/attack.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runBash(t, coder, "cd "+project+"/units/a && python3 attack.py")
	t.Logf("the attack's own view:\n%s\n%s", out.Stdout, out.Stderr)
	if !out.Sandbox.Confined {
		t.Fatalf("the attack did not run confined: %+v", out.Sandbox)
	}

	if s := confirmationStatus(t, project, id); s != confirm.Pending {
		t.Fatalf("the PM's confirmation is %s after the attack, want pending: a command decided for the human", s)
	}
	if tl, _ := os.ReadFile(filepath.Join(project, "timeline.ndjson")); strings.Contains(string(tl), "attack") {
		t.Fatalf("a command acted as the PM through its HTTP server:\n%s", tl)
	}
	if _, err := os.Stat(filepath.Join(project, "memory/devloop/pm/self-approved.md")); err == nil {
		t.Fatal("a command answered its own confirmation as a 2026-07-28 client")
	}

	// The human's ways still work. The PM's client holds the token.
	hc := httpPM.Client()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeline_append","arguments":{"kind":"note","message":"the PM's own client"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, H, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "timeline_append"} {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the PM's client with its token: %v %v", res, err)
	}
	res.Body.Close()
	// The human signs in with the code on the dashboard's terminal and
	// approves.
	sreq, _ := http.NewRequest(http.MethodPost, D+"/api/session", strings.NewReader(`{"code":"`+dash.latestCode(t)+`"}`))
	sreq.Header.Set("Content-Type", "application/json")
	sres, err := http.DefaultClient.Do(sreq)
	if err != nil || sres.StatusCode != http.StatusOK {
		t.Fatalf("the human's sign-in: %v %v", sres, err)
	}
	var s struct{ Token string }
	_ = json.NewDecoder(sres.Body).Decode(&s)
	sres.Body.Close()
	areq, _ := http.NewRequest(http.MethodPost, D+"/api/confirmations/"+id+"/approve", strings.NewReader("{}"))
	areq.Header.Set("Content-Type", "application/json")
	areq.Header.Set("X-Toolhost-Page-Token", s.Token)
	for _, c := range sres.Cookies() {
		areq.AddCookie(c)
	}
	ares, err := http.DefaultClient.Do(areq)
	if err != nil || ares.StatusCode != http.StatusOK {
		t.Fatalf("the human's approval: %v %v", ares, err)
	}
	ares.Body.Close()
	if r := testutil.CallTool(t, pm, "record_memory", map[string]any{"key": "human-only", "content": "decided by a human"}); r.IsError {
		t.Fatalf("the approved call: %s", r.Text())
	}
}

// TestSessionOfAnotherAgent: two agents launched with one session id (the
// tester's identical call consumed the coder's approval before): the
// second agent's server is refused at launch with a usage error naming the
// owner, and the coder's approval waits for the coder.
func TestSessionOfAnotherAgent(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	policy := policyFile(t, `{"tools":{"timeline_append":{"confirm":true}}}`)
	coder := testutil.Serve(t, "--project-dir", project, "--agent", "coder", "--session", "shared", "--policy", policy)
	args := map[string]any{"kind": "k", "message": "the coder's"}
	r := testutil.CallTool(t, coder, "timeline_append", args)
	id := regexp.MustCompile(`cf-[0-9A-Z]+`).FindString(r.Text())
	if id == "" {
		t.Fatalf("no confirmation: %s", r.Text())
	}
	if out, err := exec.Command(bin, "approve", id, "--project-dir", project).CombinedOutput(); err != nil {
		t.Fatalf("approve: %v %s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--project-dir", project, "--agent", "tester", "--session", "shared", "--policy", policy)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "session shared belongs to agent coder") {
		t.Fatalf("the tester on the coder's session: %v\n%s", err, out)
	}
	if s := confirmationStatus(t, project, id); s != confirm.Approved {
		t.Fatalf("the coder's approval is %s", s)
	}
	if r := testutil.CallTool(t, coder, "timeline_append", args); r.IsError {
		t.Fatalf("the coder's approved call: %s", r.Text())
	}
}
