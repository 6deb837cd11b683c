package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/upstream/upstreamtest"
)

// The authority tests attack from every place a confined process starts —
// the bash tool, a unit, a command the hook rewrote, an upstream MCP
// server — as root and as an unprivileged user, with toolhost started the
// way a human starts it: from a terminal (a real pty, its controlling
// terminal), with a descriptor left open (`exec 7>>file`) and secrets in
// its environment. Every verdict is an effect: a file's content or flags,
// bytes waiting in the terminal, what reached a listener, a process alive.

// unprivilegedUID is the user the unprivileged runs use when the tests run
// as root: no account is needed, the kernel only knows numbers.
const unprivilegedUID = 61033

// identity is whom toolhost runs as.
type identity struct {
	name string
	// uid is the user to switch to (-1: the test's own).
	uid int
}

func (id identity) root() bool { return id.uid == -1 && os.Geteuid() == 0 }

// identities are root and an unprivileged user when the tests run as root
// (CI), else only the test's own (unprivileged) user.
func identities(t *testing.T) []identity {
	if os.Geteuid() == 0 {
		testutil.NeedTool(t, "setpriv", "", "apt-get install util-linux (scripts/deps/05-authority.sh)")
		return []identity{{"root", -1}, {"unprivileged", unprivilegedUID}}
	}
	t.Log("not root: the attacks run as this user only")
	return []identity{{"unprivileged", -1}}
}

// secrets are what the human's environment holds; no confined process may
// see one. MY_SETTING passes (the agent's sandbox.env names MY_*).
var humanSecrets = map[string]string{
	"ANTHROPIC_API_KEY":     "sk-ant-api03-human-secret-1",
	"AWS_SECRET_ACCESS_KEY": "human-secret-2-aws",
	"GITHUB_TOKEN":          "ghp_human_secret_3",
	"MY_PASSWORD":           "human-secret-4-pattern",
}

const passedSetting = "visible-setting-5"

// stage is one identity's world: a project, a directory outside it, the
// binaries, a terminal, and the configuration of the agent under attack
// (the integrator: bash, spawn_units and the CLI's Bash) and of an
// upstream server (the fake, with a probe tool).
type stage struct {
	t        *testing.T
	id       identity
	base     string
	project  string
	outside  string
	home     string
	servers  string
	bin      string
	probe    string
	fake     string
	tty      *terminal
	agents   string
	policy   string
	extraEnv []string
}

// stageOptions shape a stage's configuration.
type stageOptions struct {
	// agent edits the integrator's entry of the agents file.
	agent func(a map[string]any)
	// upstream is the fake upstream's sandbox.
	upstream policy.UpstreamSandbox
	// env is added to toolhost's environment.
	env []string
}

var (
	publicOnce sync.Once
	publicDir  string
	publicErr  error
)

// publicBinaries copies toolhost, the probe and the fake upstream into a
// directory every user may read and run (the test builds are private).
func publicBinaries(t *testing.T) (bin, probe, fake string) {
	t.Helper()
	srcs := []string{testutil.Toolhost(t), confineProbe(t), upstreamtest.FakeMCP(t)}
	publicOnce.Do(func() {
		publicDir, publicErr = testutil.ProcessDir("authority-bin")
		if publicErr != nil {
			return
		}
		if publicErr = os.Chmod(publicDir, 0o755); publicErr != nil {
			return
		}
		for _, s := range srcs {
			if publicErr = copyFile(s, filepath.Join(publicDir, filepath.Base(s)), 0o755); publicErr != nil {
				return
			}
		}
	})
	if publicErr != nil {
		t.Fatal(publicErr)
	}
	return filepath.Join(publicDir, "toolhost"), filepath.Join(publicDir, "confineprobe"), filepath.Join(publicDir, "fakemcp")
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func newStage(t *testing.T, id identity, o stageOptions) *stage {
	t.Helper()
	base, err := os.MkdirTemp("", "toolhost-authority-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	st := &stage{t: t, id: id, base: base, project: filepath.Join(base, "project"), outside: filepath.Join(base, "outside"),
		home: filepath.Join(base, "home"), servers: filepath.Join(base, "servers"), extraEnv: o.env}
	st.bin, st.probe, st.fake = publicBinaries(t)
	for _, d := range []string{"integration/cases", "integration/logs", "units/a", ".toolhost"} {
		mkdir(t, filepath.Join(st.project, d))
	}
	for _, d := range []string{st.outside, st.home, st.servers} {
		mkdir(t, d)
	}
	write(t, filepath.Join(st.project, "integration/cases/c.json"), "{}\n")
	write(t, filepath.Join(st.project, ".toolhost/audit.ndjson"), "")
	write(t, filepath.Join(st.outside, "secret"), "outside\n")
	write(t, filepath.Join(st.outside, "fd7.log"), "")
	if id.uid >= 0 {
		chownTree(t, base, id.uid)
	}
	// Readable only by another user: root reads it with CAP_DAC_OVERRIDE,
	// which a confined command has not.
	other := filepath.Join(st.outside, "others")
	write(t, other, "others-only-content\n")
	if os.Geteuid() == 0 {
		if err := os.Chown(other, 4243, 4243); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(other, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st.tty = openTerminal(t, id)
	st.writeConfigs(o)
	return st
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeConfigs writes the agents file (the integrator may call the fake's
// tools; its commands get MY_* from the environment) and the policy (the
// fake upstream with its sandbox).
func (st *stage) writeConfigs(o stageOptions) {
	t := st.t
	var doc map[string][]map[string]any
	if err := json.Unmarshal(configs.AgentsJSON, &doc); err != nil {
		t.Fatal(err)
	}
	for _, a := range doc["agents"] {
		if a["short"] != "integrator" {
			continue
		}
		cli := a["cli"].(map[string]any)
		cli["toolPolicy"] = append(cli["toolPolicy"].([]any), "fake__*")
		a["sandbox"].(map[string]any)["env"] = []string{"MY_*"}
		if o.agent != nil {
			o.agent(a)
		}
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	st.agents = filepath.Join(st.base, "agents.json")
	write(t, st.agents, string(b))
	st.policy = filepath.Join(st.base, "tools.json")
	upstreamtest.WritePolicy(t, st.policy, map[string]policy.Rule{"fake__probe": {Permission: policy.Write}},
		policy.Upstream{Name: "fake", Transport: "stdio", Command: st.fake, DiscoveryTimeoutMS: 20000, Pin: policy.PinTrustNew, Sandbox: o.upstream})
	for _, f := range []string{st.agents, st.policy} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// env is toolhost's environment: the human's, with secrets in it.
func (st *stage) env() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + st.home, "LANG=C.UTF-8", "TERM=xterm",
		confine.EnvServersDir + "=" + st.servers, "MY_SETTING=" + passedSetting}
	for k, v := range humanSecrets {
		env = append(env, k+"="+v)
	}
	return append(env, st.extraEnv...)
}

// wrap is argv started the way the human starts toolhost: as the stage's
// user, with the terminal as controlling terminal and descriptor 7 open on
// a file outside everything.
func (st *stage) wrap(argv ...string) []string {
	var out []string
	if st.id.uid >= 0 {
		u := strconv.Itoa(st.id.uid)
		out = append(out, "setpriv", "--reuid="+u, "--regid="+u, "--clear-groups", "--")
	}
	out = append(out, st.probe, "-wrap", "-ctty", st.tty.path, "-fd", "7="+filepath.Join(st.outside, "fd7.log"), "--")
	return append(out, argv...)
}

// as is argv run as the stage's user, nothing else.
func (st *stage) as(argv ...string) []string {
	if st.id.uid < 0 {
		return argv
	}
	u := strconv.Itoa(st.id.uid)
	return append([]string{"setpriv", "--reuid=" + u, "--regid=" + u, "--clear-groups", "--"}, argv...)
}

// serve starts toolhost serve for the integrator, wrapped.
func (st *stage) serve(extra ...string) *stdioclient.Client {
	t := st.t
	argv := st.wrap(append([]string{st.bin, "serve", "--project-dir", st.project, "--agent", "integrator",
		"--agents", st.agents, "--policy", st.policy, "--session", "sess-authority"}, extra...)...)
	c, err := stdioclient.Start(argv[0], argv[1:], st.env())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close(20 * time.Second)
		// A failed call names only an error id: its cause is in the log.
		if t.Failed() {
			t.Logf("toolhost's log:\n%s", c.Stderr())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, "2025-06-18", nil); err != nil {
		t.Fatalf("initialize: %v\n%s", err, c.Stderr())
	}
	return c
}

// probeLine is one check the probe reported.
type probeLine struct {
	Check, Target, Result, Value string
}

// probeReport is what one probe run reported, by "check target", and all
// it printed.
type probeReport struct {
	lines map[string]probeLine
	raw   string
	// refused is set when the source refused to start the probe at all.
	refused string
}

func parseProbe(raw string) probeReport {
	r := probeReport{lines: map[string]probeLine{}, raw: raw}
	for _, line := range strings.Split(raw, "\n") {
		var l probeLine
		if json.Unmarshal([]byte(line), &l) == nil && l.Check != "" {
			r.lines[l.Check+" "+l.Target] = l
		}
	}
	return r
}

func (r probeReport) result(key string) string { return r.lines[key].Result }

func (r probeReport) done() bool { _, ok := r.lines["done "]; return ok }

// source is a place a confined process starts from; run starts the probe
// there with args and returns what it reported.
type source struct {
	name string
	run  func(st *stage, args []string) probeReport
}

var sources = []source{
	{"bash tool", runFromBashTool},
	{"unit", runAsUnit},
	{"hook", runBehindHook},
	{"upstream", runFromUpstream},
}

func runFromBashTool(st *stage, args []string) probeReport {
	c := st.serve()
	return bashProbe(st, c, args)
}

func bashProbe(st *stage, c *stdioclient.Client, args []string) probeReport {
	t := st.t
	cmd := shellJoin(append(append([]string{st.probe}, args...), "-exit"))
	res := testutil.CallTool(t, c, "bash", map[string]any{"command": cmd, "timeout_ms": 30000})
	if res.IsError {
		return probeReport{refused: res.Text()}
	}
	var out bashResult
	testutil.DecodeResult(t, "bash", res, &out)
	return parseProbe(out.Stdout)
}

func runAsUnit(st *stage, args []string) probeReport {
	t := st.t
	c := st.serve()
	pickPort(t, c, "p")
	res := testutil.CallTool(t, c, "spawn_units", map[string]any{"action": "start",
		"units": []map[string]any{{"id": "p", "cwd": "integration/cases", "argv": append([]string{st.probe}, args...)}}})
	var out spawnResult
	testutil.DecodeResult(t, "spawn_units", res, &out)
	if res.IsError || len(out.Units) != 1 || out.Units[0].State != "running" {
		why := res.Text()
		if len(out.Units) == 1 {
			why = out.Units[0].Error
		}
		return probeReport{refused: why}
	}
	defer testutil.CallTool(t, c, "spawn_units", map[string]any{"action": "stop", "units": []map[string]any{{"id": "p"}}})
	log := filepath.Join(st.project, "integration/logs/p.out.log")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if r := parseProbe(string(b)); r.done() {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unit did not finish its checks; log:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runBehindHook asks the hook about a Bash call, then runs the command it
// rewrote the way the CLI runs one (bash -c) from the human's terminal.
func runBehindHook(st *stage, args []string) probeReport {
	t := st.t
	cmd := shellJoin(append(append([]string{st.probe}, args...), "-exit"))
	payload, _ := json.Marshal(map[string]any{"session_id": "sess-hook", "cwd": st.project, "hook_event_name": "PreToolUse",
		"tool_name": "Bash", "tool_input": map[string]any{"command": cmd}})
	hook := st.as(st.bin, "hook", "pretooluse", "--agent", "integrator", "--project-dir", st.project, "--agents", st.agents, "--policy", st.policy)
	h := exec.Command(hook[0], hook[1:]...)
	h.Env = st.env()
	h.Stdin = strings.NewReader(string(payload))
	out, err := h.Output()
	if err != nil {
		t.Fatalf("hook: %v %s", err, out)
	}
	var answer struct {
		HookSpecificOutput struct {
			PermissionDecision       string
			PermissionDecisionReason string
			UpdatedInput             struct{ Command string }
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &answer); err != nil {
		t.Fatalf("hook answer %q: %v", out, err)
	}
	if d := answer.HookSpecificOutput.PermissionDecision; d != "" {
		return probeReport{refused: d + ": " + answer.HookSpecificOutput.PermissionDecisionReason}
	}
	rewritten := answer.HookSpecificOutput.UpdatedInput.Command
	if !strings.Contains(rewritten, " confine ") {
		t.Fatalf("the hook did not rewrite the command to run confined: %q", rewritten)
	}
	argv := st.wrap("bash", "-c", rewritten)
	run := exec.Command(argv[0], argv[1:]...)
	run.Dir = st.project
	run.Env = st.env()
	run.Stdin = st.tty.slave
	run.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, _ := run.Output()
	return parseProbe(string(stdout))
}

func runFromUpstream(st *stage, args []string) probeReport {
	t := st.t
	c := st.serve()
	if !upstreamReady(t, c) {
		// Why is in the log line of the failed discovery.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(c.Stderr(), "upstream_discovery_failed") {
				break
			}
		}
		return probeReport{refused: c.Stderr()}
	}
	res := testutil.CallTool(t, c, "fake__probe", map[string]any{"argv": append(append([]string{st.probe}, args...), "-exit")})
	if res.IsError {
		return probeReport{refused: res.Text()}
	}
	return parseProbe(res.Text())
}

// unconfined runs the probe directly, as the stage's user, from its
// terminal with descriptor 7 open: the control that shows each attack works
// where nothing confines it.
func (st *stage) unconfined(args ...string) probeReport {
	argv := st.wrap(append(append([]string{st.probe}, args...), "-exit")...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = st.env()
	c.Dir = st.project
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := c.Output()
	if err != nil {
		st.t.Fatalf("unconfined probe: %v %s", err, out)
	}
	return parseProbe(string(out))
}

// shellJoin quotes argv for bash -c.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// terminal is a pty: the human's terminal in front of toolhost. What is
// written to it (and echoed) is read and dropped, so it never blocks a
// writer.
type terminal struct {
	master, slave *os.File
	path          string
}

// pending returns (and consumes) the input waiting in the terminal, for
// the shell that reads it next: what TIOCSTI pushed.
func (tt *terminal) pending(t *testing.T) string {
	t.Helper()
	fd := int(tt.slave.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	defer unix.SetNonblock(fd, false) //nolint:errcheck
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, buf)
		if n > 0 {
			got = append(got, buf[:n]...)
			continue
		}
		if err == nil || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EIO) {
			return string(got)
		}
		t.Fatal(err)
	}
}

// sink is a loopback listener that records what reaches it, in order.
type sink struct {
	port int
	mu   sync.Mutex
	got  []string
}

func newSink(t *testing.T) *sink {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		// One connection at a time, in the order the kernel queued them.
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			s.mu.Lock()
			s.got = append(s.got, strings.TrimSpace(line))
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

// reached returns what arrived since the last call. A marker connection
// made now is queued behind every earlier one, so once it is read nothing
// earlier can still be on its way.
func (s *sink) reached(t *testing.T) []string {
	t.Helper()
	c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", s.port))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("marker\n"))
	c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		for i, g := range s.got {
			if g == "marker" {
				got := append([]string(nil), s.got[:i]...)
				s.got = s.got[i+1:]
				s.mu.Unlock()
				return got
			}
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the sink's marker never arrived")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// upstreamReady waits for the fake upstream's discovery (tools/list holds
// until it answered) and reports whether its probe tool is served.
func upstreamReady(t *testing.T, c *stdioclient.Client) bool {
	t.Helper()
	_, ok := testutil.ListTools(t, c)["fake__probe"]
	return ok
}
