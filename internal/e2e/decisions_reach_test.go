package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// decisionAttack is the Python script a confined command runs to decide
// for the human or act as another agent, given the dashboard's URL (dash,
// with its trailing slash trimmed), the PM's `serve --http` URL (mcp), the
// pending confirmation's id, the project and the toolhost binary. It prints
// what it saw and got; its effect is what the tests judge.
func decisionAttack(dash, mcp, id, project, bin string) string {
	const script = `import glob, json, os, re, subprocess, time, urllib.request, http.cookiejar
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
print("dashboard GET /:", st)
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
# 3. /proc of every process: argv, environment, and the terminals — the
# code is printed on the dashboard's stdout, and a server's stdin takes
# JSON-RPC (the secrets directory itself is the confinement's to hide:
# its own e2e test reads it from every source)
loot = ""
pids = [d for d in glob.glob("/proc/[0-9]*") if d != "/proc/%%d" %% os.getpid()]
for d in pids:
    for f in ("cmdline", "environ"):
        try:
            loot += open(d + "/" + f, "rb").read().decode(errors="replace").replace("\0", "\n") + "\n"
        except Exception:
            pass
# (the script's own pipes, which its shell shares, are left alone)
own = {os.fstat(n).st_ino for n in (0, 1, 2)}
opened = []
for d in pids:
    for n in ("1", "2"):
        try:
            if os.stat(d + "/fd/" + n).st_ino in own:
                continue
            fd = os.open(d + "/fd/" + n, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        opened.append(d + "/fd/" + n)
        try:
            loot += os.read(fd, 65536).decode(errors="replace") + "\n"
        except OSError:
            pass
        os.close(fd)
    try:
        argv = open(d + "/cmdline", "rb").read().split(b"\0")
    except Exception:
        continue
    if b"serve" in argv and b"pm" in argv:
        try:
            fd = os.open(d + "/fd/0", os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        opened.append(d + "/fd/0")
        call = {"jsonrpc": "2.0", "id": 9001, "method": "tools/call", "params": {"name": "timeline_append", "arguments": {"kind": "attack", "message": "through the PM's stdin"}}}
        try:
            os.write(fd, (json.dumps(call) + "\n").encode())
        except OSError:
            pass
        os.close(fd)
print("terminals of other processes opened:", opened)
for code in sorted(set(re.findall(r"enter the code (\S+) there", loot))):
    jar3 = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    st, body = req(D + "/api/session", {"code": code}, js, jar3)
    t3 = json.loads(body).get("token", "") if st == 200 else ""
    print("a stolen code:", st, req(D + "/api/confirmations/" + ID + "/approve", {}, dict(js, **{"X-Toolhost-Page-Token": t3}), jar3)[0])
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
# 6. the human's own commands, from inside; a token printed is tried
for argv in ([BIN, "approve", ID, "--project-dir", P], [BIN, "mcp-config", "--agent", "pm", "--project-dir", P, "--http-headers"]):
    r = subprocess.run(argv, capture_output=True, text=True)
    print(argv[1], "exit", r.returncode, (r.stdout + r.stderr).strip()[-200:])
    for c in set(re.findall(r"[A-Za-z0-9_-]{40,}", r.stdout)):
        print("a token it printed:", mcp("timeline_append", {"kind": "attack", "message": "with mcp-config's token"}, c)[0])
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
	return fmt.Sprintf(script, dash, mcp, id, project, bin)
}

// judgeDecisionAttack fails t when the attack had an effect: the PM's
// confirmation id is no longer pending, or the PM's timeline or memory
// hold anything of the attack.
func judgeDecisionAttack(t *testing.T, project, id string) {
	t.Helper()
	if s := confirmationStatus(t, project, id); s != confirm.Pending {
		t.Errorf("the PM's confirmation is %s after the attack, want pending: a command decided for the human", s)
	}
	if tl, _ := os.ReadFile(filepath.Join(project, "timeline.ndjson")); strings.Contains(string(tl), "attack") {
		t.Errorf("a command acted as the PM:\n%s", tl)
	}
	if _, err := os.Stat(filepath.Join(project, "memory/devloop/pm/self-approved.md")); err == nil {
		t.Error("a command answered its own confirmation as a 2026-07-28 client")
	}
}

// TestDecisionsHoldWithToolhostReachable: the same attack when the agent's
// commands may reach toolhost's own servers (sandbox.network.reachToolhost,
// which a user sets for a reason), run from the integrator's confined bash
// tool as root and as an unprivileged user with the dashboard, the PM's
// serve --http and the PM's stdio server all running as that user. The
// network lets it in (the dashboard answers its GET, the server its
// tokenless call with 401), and still nothing is decided or written for
// the PM: what stops it is the sign-in code, the token and the kernel's
// process boundaries, not the port.
func TestDecisionsHoldWithToolhostReachable(t *testing.T) {
	t.Parallel()
	for _, who := range identities(t) {
		t.Run(who.name, func(t *testing.T) {
			st := newStage(t, who, stageOptions{agent: func(a map[string]any) {
				a["sandbox"].(map[string]any)["network"] = map[string]any{"connect": "any", "bind": "any", "unitBind": "own", "reachToolhost": true}
			}})
			// The default policy with record_memory confirmed, where the
			// stage's user may read it.
			b, err := os.ReadFile(policyFile(t, `{"tools":{"record_memory":{"confirm":true}}}`))
			if err != nil {
				t.Fatal(err)
			}
			policy := filepath.Join(st.base, "confirm.json")
			write(t, policy, string(b))
			argv := st.as(st.bin, "serve", "--project-dir", st.project, "--agent", "pm", "--session", "sess-pm", "--policy", policy)
			pm, err := stdioclient.Start(argv[0], argv[1:], st.env())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pm.Close(20 * time.Second) })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := pm.Initialize(ctx, "2025-06-18", nil); err != nil {
				t.Fatalf("initialize: %v\n%s", err, pm.Stderr())
			}
			ask := testutil.CallTool(t, pm, "record_memory", map[string]any{"key": "human-only", "content": "decided by a human"})
			id := regexp.MustCompile(`cf-[0-9A-Z]+`).FindString(ask.Text())
			if !ask.IsError || id == "" {
				t.Fatalf("record_memory did not wait for a human: %s", ask.Text())
			}
			dash, mcp := st.startServers(t)
			script := decisionAttack("http://127.0.0.1:"+dash, "http://127.0.0.1:"+mcp+"/mcp", id, st.project, st.bin)
			at := filepath.Join(st.project, "integration/cases/attack.py")
			write(t, at, script)
			if who.uid >= 0 {
				chownTree(t, filepath.Dir(at), who.uid)
			}
			c := st.serve()
			res := testutil.CallTool(t, c, "bash", map[string]any{"command": "cd " + filepath.Dir(at) + " && python3 attack.py", "timeout_ms": 120000})
			if res.IsError {
				t.Fatalf("the attack did not run: %s", res.Text())
			}
			var out bashResult
			testutil.DecodeResult(t, "bash", res, &out)
			t.Logf("the attack's own view:\n%s\n%s", out.Stdout, out.Stderr)
			if !out.Sandbox.Confined {
				t.Fatalf("the attack did not run confined: %+v", out.Sandbox)
			}
			for _, reached := range []string{"dashboard GET /: 200", "without a token: 401"} {
				if !strings.Contains(out.Stdout, reached) {
					t.Errorf("the attack did not reach toolhost's servers (%q missing): it proves nothing of their own locks", reached)
				}
			}
			judgeDecisionAttack(t, st.project, id)
		})
	}
}
