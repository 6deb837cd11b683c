package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// attackProject is a project with something of every agent's and of
// toolhost's own on disk, a directory outside it and a private HOME.
type attackProject struct {
	dir, outside, home string
}

// files the attacks must leave as they are, with their content.
var planted = map[string]string{
	"prd/index.html":           "PRD\n",
	"units/a/src/app.ts":       "export {}\n",
	"units/a/tests/a.test.ts":  "test\n",
	"timeline.ndjson":          `{"seq":1}` + "\n",
	"bugs/BUG-0001.json":       "{}\n",
	".toolhost/units.json":     `{"units":{}}` + "\n",
	"integration/cases/c.json": "{}\n",
	".toolhost/locks/timeline": "",
}

func newAttackProject(t *testing.T) attackProject {
	t.Helper()
	p := attackProject{dir: t.TempDir(), outside: t.TempDir(), home: t.TempDir()}
	for rel, content := range planted {
		path := filepath.Join(p.dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(p.outside, "secret"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// bashResult is what the tests read of a bash result.
type bashResult struct {
	OK       bool   `json:"ok"`
	Reason   string `json:"reason"`
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Sandbox  struct {
		Confined   bool     `json:"confined"`
		ABI        int      `json:"abi"`
		Write      []string `json:"write"`
		Unconfined string   `json:"unconfined"`
	} `json:"sandbox"`
}

func runBash(t *testing.T, c *stdioclient.Client, command string) bashResult {
	t.Helper()
	res := testutil.CallTool(t, c, "bash", map[string]any{"command": command, "timeout_ms": 20000})
	if res.IsError {
		t.Fatalf("bash %q: isError: %s", command, res.Text())
	}
	var out bashResult
	testutil.DecodeResult(t, "bash", res, &out)
	return out
}

// TestCommandsAreConfined attacks, for every agent with Bash, through the
// real binary's bash tool, and checks the disk: every write the agent's
// allow-list does not grant fails and leaves nothing behind, whichever way
// the command tries; what the allow-list grants works.
func TestCommandsAreConfined(t *testing.T) {
	t.Parallel()
	type agentCase struct {
		agent   string
		unit    string
		allowed string // a directory the agent's commands may write (project-relative)
		foreign string // another agent's directory (project-relative)
	}
	for _, ac := range []agentCase{
		{agent: "coder", unit: "a", allowed: "units/a", foreign: "prd"},
		{agent: "tester", allowed: "units/a/tests", foreign: "units/a/src"},
		{agent: "integrator", allowed: "integration/cases", foreign: "units/a/src"},
	} {
		t.Run(ac.agent, func(t *testing.T) {
			t.Parallel()
			p := newAttackProject(t)
			allowed := filepath.Join(p.dir, ac.allowed)
			// Planted by someone outside the sandbox: a symlink in the
			// allowed directory that leads out of it.
			if err := os.Symlink(p.outside, filepath.Join(allowed, "out")); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "HOME="+p.home)
			args := []string{"--project-dir", p.dir, "--agent", ac.agent, "--session", "sess-attack"}
			if ac.unit != "" {
				args = append(args, "--unit", ac.unit)
			}
			c := testutil.ServeEnv(t, env, args...)

			tmpName := fmt.Sprintf("toolhost-attack-%s-%d", ac.agent, os.Getpid())
			t.Cleanup(func() {
				_ = os.Remove(filepath.Join(os.TempDir(), tmpName))
				_ = os.Remove(filepath.Join(os.TempDir(), tmpName+"-cd"))
			})
			q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
			P, A, F, O := q(p.dir), q(allowed), q(filepath.Join(p.dir, ac.foreign)), q(p.outside)
			attacks := []struct {
				name, command string
				// absent must not exist afterwards (absolute or project-relative).
				absent []string
			}{
				{"another agent's dir", "echo x > " + F + "/hack", []string{ac.foreign + "/hack"}},
				{"the project root", "echo x > " + P + "/root.txt", []string{"root.txt"}},
				{"/tmp outside TMPDIR", "echo x > /tmp/" + tmpName, []string{"/tmp/" + tmpName}},
				{"HOME", `echo x > "$HOME/dotfile"`, []string{filepath.Join(p.home, "dotfile")}},
				{"symlink planted in an allowed dir", "echo x > " + A + "/out/evil", []string{filepath.Join(p.outside, "evil")}},
				{"symlink made by the command", "ln -s " + O + " " + A + "/mine && echo x > " + A + "/mine/evil2", []string{filepath.Join(p.outside, "evil2")}},
				{"hard link to a file outside", "ln " + P + "/prd/index.html " + A + "/hl && echo x >> " + A + "/hl", []string{ac.allowed + "/hl"}},
				{"mv a file outside in", "mv " + P + "/prd/index.html " + A + "/moved", []string{ac.allowed + "/moved"}},
				{"truncate a file outside", "truncate -s 0 " + P + "/prd/index.html", nil},
				{"grandchild", "bash -c 'bash -c \"echo x > " + strings.ReplaceAll(P, "'", "") + "/grand\"'", []string{"grand"}},
				{"background job", "(sleep 0.1; echo x > " + F + "/bg) & wait $!", []string{ac.foreign + "/bg"}},
				{"cd /", "cd / && echo x > tmp/" + tmpName + "-cd; echo x > " + P + "/cd.txt", []string{"/tmp/" + tmpName + "-cd", "cd.txt"}},
				{"forged audit row", `echo '{"tool":"forged","status":"ok"}' >> ` + P + "/.toolhost/audit.ndjson", nil},
				{"timeline", "echo '{\"seq\":99}' >> " + P + "/timeline.ndjson; rm -f " + P + "/timeline.ndjson", nil},
				{"bug store", "echo x > " + P + "/bugs/BUG-9999.json; rm -f " + P + "/bugs/BUG-0001.json", []string{"bugs/BUG-9999.json"}},
				{"locks", "echo x > " + P + "/.toolhost/locks/timeline; rm -rf " + P + "/.toolhost/locks", nil},
				{"units.json", `echo '{"units":{"x":{"pid":1,"pgid":1}}}' > ` + P + "/.toolhost/units.json", nil},
			}
			for _, a := range attacks {
				out := runBash(t, c, a.command)
				for _, rel := range a.absent {
					path := rel
					if !filepath.IsAbs(rel) {
						path = filepath.Join(p.dir, rel)
					}
					if _, err := os.Lstat(path); err == nil {
						t.Errorf("%s: %s was created (stdout %q stderr %q)", a.name, rel, out.Stdout, out.Stderr)
					}
				}
				if out.OK {
					t.Errorf("%s: the command succeeded: %+v", a.name, out)
				}
			}
			for rel, content := range planted {
				got, err := os.ReadFile(filepath.Join(p.dir, rel))
				if err != nil || string(got) != content {
					t.Errorf("%s changed: %q, %v; want %q", rel, got, err, content)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(p.outside, "secret")); string(got) != "outside\n" {
				t.Errorf("the file outside the project changed: %q", got)
			}
			for _, tool := range auditTools(t, p.dir) {
				if tool == "forged" {
					t.Error("a command appended a forged audit row")
				}
			}

			// What the allow-list grants works, and the private TMPDIR is
			// the command's own and gone afterwards.
			ok := runBash(t, c, "echo fine > "+A+"/ok.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo \"$TMPDIR\"")
			if !ok.OK || !strings.HasPrefix(ok.Stdout, "t\n") {
				t.Fatalf("a write inside the allow-list failed: %+v", ok)
			}
			if got, _ := os.ReadFile(filepath.Join(allowed, "ok.txt")); string(got) != "fine\n" {
				t.Errorf("ok.txt = %q", got)
			}
			tmp := strings.TrimSpace(strings.TrimPrefix(ok.Stdout, "t\n"))
			if _, err := os.Stat(tmp); err == nil || !strings.Contains(tmp, "toolhost-cmd-") {
				t.Errorf("private TMPDIR %q is still there after the call (or not private)", tmp)
			}
			if !ok.Sandbox.Confined || ok.Sandbox.ABI < 1 || !strings.Contains(strings.Join(ok.Sandbox.Write, " "), "$TMPDIR") {
				t.Errorf("result sandbox = %+v, want confined with $TMPDIR among the roots", ok.Sandbox)
			}

			// A refused write says what the sandbox allows.
			refused := runBash(t, c, "echo x > "+P+"/nope.txt")
			if !strings.Contains(refused.Reason, "the sandbox (Landlock) refused it") || !strings.Contains(refused.Reason, "$TMPDIR") {
				t.Errorf("reason of a refused write = %q, want the sandbox named with the allowed roots", refused.Reason)
			}
			// Every bash row says how the command was confined.
			rows := bashAuditSandbox(t, p.dir)
			if len(rows) < len(attacks) {
				t.Fatalf("%d bash audit rows with a sandbox, want at least %d", len(rows), len(attacks))
			}
			for _, r := range rows {
				if !strings.HasPrefix(r, "landlock abi ") || !strings.Contains(r, "$TMPDIR") {
					t.Errorf("audit sandbox %q, want the Landlock ABI and the write roots", r)
				}
			}
		})
	}
}

// auditTools returns the tool of every audit row.
func auditTools(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".toolhost/audit.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r struct{ Tool string }
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		tools = append(tools, r.Tool)
	}
	return tools
}

// bashAuditSandbox returns the sandbox field of every bash audit row.
func bashAuditSandbox(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, ".toolhost/audit.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Tool    string `json:"tool"`
			Sandbox string `json:"sandbox"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Tool == "bash" {
			out = append(out, r.Sandbox)
		}
	}
	return out
}

// writeAgents writes the embedded agents file with edit applied to each
// agent (as a JSON object) and returns its path.
func writeAgents(t testing.TB, edit func(agent map[string]any)) string {
	t.Helper()
	var doc map[string][]map[string]any
	if err := json.Unmarshal(configs.AgentsJSON, &doc); err != nil {
		t.Fatal(err)
	}
	for _, a := range doc["agents"] {
		edit(a)
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	path := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNoLandlock simulates a machine without Landlock (the ABI capped at 0):
// require refuses the command with what to change, best-effort runs it and
// says so in the result and the audit row, off runs it without a word.
func TestNoLandlock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode string
		ran  bool
		want string // in the refusal, or the result's sandbox.unconfined
	}{
		{"require", false, `sandbox.commands is "require"`},
		{"best-effort", true, "TOOLHOST_LANDLOCK_ABI=0 disables Landlock"},
		{"off", true, "sandbox.commands is off"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			agents := writeAgents(t, func(a map[string]any) {
				a["sandbox"].(map[string]any)["commands"] = tc.mode
			})
			env := append(os.Environ(), "TOOLHOST_LANDLOCK_ABI=0")
			c := testutil.ServeEnv(t, env, "--project-dir", dir, "--agent", "tester", "--agents", agents)
			res := testutil.CallTool(t, c, "bash", map[string]any{"command": "echo ran > ran.txt"})
			_, err := os.Stat(filepath.Join(dir, "ran.txt"))
			if ran := err == nil; ran != tc.ran {
				t.Fatalf("ran = %v, want %v: %s", ran, tc.ran, res.Text())
			}
			if !tc.ran {
				if !res.IsError || !strings.Contains(res.Text(), tc.want) || !strings.Contains(res.Text(), "best-effort") {
					t.Fatalf("refusal %s, want isError naming %q and what to change", res.Text(), tc.want)
				}
				return
			}
			var out bashResult
			testutil.DecodeResult(t, "bash", res, &out)
			if out.Sandbox.Confined || !strings.Contains(out.Sandbox.Unconfined, tc.want) {
				t.Fatalf("sandbox %+v, want unconfined: %q", out.Sandbox, tc.want)
			}
			rows := bashAuditSandbox(t, dir)
			if len(rows) != 1 || !strings.HasPrefix(rows[0], "unconfined: "+out.Sandbox.Unconfined+"; env ") {
				t.Fatalf("audit sandbox %q, want the unconfined reason", rows)
			}
		})
	}
}

// TestConfineCommandAndBashToolShareTheRuleset: `toolhost confine
// --explain` and the bash tool build the same plan from one function; and
// `toolhost confine` enforces it on the command it execs, keeping the exit
// status, the streams and the working directory.
func TestConfineCommandAndBashToolShareTheRuleset(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	p := newAttackProject(t)
	c := testutil.Serve(t, "--project-dir", p.dir, "--agent", "tester")
	tool := runBash(t, c, "true")
	var plan struct {
		ABI     int      `json:"abi"`
		Write   []string `json:"write"`
		Skipped []string `json:"skipped"`
	}
	out, err := exec.Command(bin, "confine", "--agent", "tester", "--project-dir", p.dir, "--explain").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		t.Fatal(err)
	}
	if plan.ABI != tool.Sandbox.ABI || strings.Join(plan.Write, " ") != strings.Join(tool.Sandbox.Write, " ") {
		t.Fatalf("confine --explain %+v, bash tool %+v: want the same roots", plan, tool.Sandbox)
	}
	if want := "units/a/tests/ reports/ memory/devloop/tester/ $TMPDIR"; strings.Join(plan.Write, " ") != want {
		t.Errorf("write roots %q, want %q", plan.Write, want)
	}

	cmd := exec.Command(bin, "confine", "--agent", "tester", "--project-dir", p.dir, "--",
		"bash", "-c", `pwd; read -r line; echo "got $line"; echo err >&2; echo x > tests/ok; echo x > ../../prd/no; exit 7`)
	cmd.Dir = filepath.Join(p.dir, "units/a")
	cmd.Stdin = strings.NewReader("input\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("exit %v, want 7", err)
	}
	if stdout.String() != cmd.Dir+"\ngot input\n" || !strings.HasPrefix(stderr.String(), "err\n") || !strings.Contains(stderr.String(), "../../prd/no: Permission denied") {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(p.dir, "units/a/tests/ok")); err != nil {
		t.Error("the allowed write did not happen")
	}
	if _, err := os.Stat(filepath.Join(p.dir, "prd/no")); err == nil {
		t.Error("toolhost confine let the command write prd/")
	}
}

// TestConfineRelaysSignals: `toolhost confine` (and the helper
// toolhost-confine) supervises its command
// instead of exec'ing it, so what a terminal or the agent CLI sends to it
// must reach the command (its process group), and a command killed by a
// signal must leave `toolhost confine` killed by the same signal, as if
// it had been the command itself.
func TestConfineRelaysSignals(t *testing.T) {
	t.Parallel()
	for name, argv := range testutil.ConfineCommands(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testConfineRelaysSignals(t, argv)
		})
	}
}

func testConfineRelaysSignals(t *testing.T, argv []string) {
	dir := t.TempDir()
	confineCmd := func(script string) *exec.Cmd {
		return exec.Command(argv[0], append(argv[1:], "--agent", "tester", "--project-dir", dir, "--", "bash", "-c", script)...)
	}

	// The command's own trap runs on the SIGTERM sent to toolhost confine,
	// and so does the default action for the sleep in its group.
	cmd := confineCmd(`trap 'echo got-TERM; exit 3' TERM; sleep 1000 & echo ready; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("first line %q, want ready; stderr %s", lines.Text(), stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || string(rest) != "got-TERM\n" {
		t.Fatalf("after SIGTERM: exit %v, output %q, stderr %s; want the trap's exit 3 and got-TERM", err, rest, stderr.String())
	}

	// A command killed by a signal: toolhost confine dies by it too.
	cmd = confineCmd(`kill -USR1 $$`)
	cmd.Stderr = &stderr
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("exit %v, want killed by SIGUSR1", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGUSR1 {
		t.Fatalf("toolhost confine ended with %v, want killed by SIGUSR1; stderr %s", ee, stderr.String())
	}
}

// TestConfinedCommandCannotSignalToolhost: a confined command (and its
// children) cannot signal toolhost or any process outside its own domain.
func TestConfinedCommandCannotSignalToolhost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := testutil.Serve(t, "--project-dir", dir, "--agent", "integrator")
	pid := c.Process().PID
	out := runBash(t, c, fmt.Sprintf("kill -0 %d; echo toolhost=$?; kill -0 1; echo init=$?; sleep 5 & kill -0 $!; echo own=$?; kill $!", pid))
	if !strings.Contains(out.Stdout, "toolhost=1") || !strings.Contains(out.Stdout, "init=1") || !strings.Contains(out.Stdout, "own=0") {
		t.Fatalf("stdout %q stderr %q; want signals to toolhost and init refused, to its own child allowed", out.Stdout, out.Stderr)
	}
}

var (
	probeOnce sync.Once
	probePath string
	probeErr  error
)

// confineProbe builds testdata/confineprobe once per test process.
func confineProbe(t testing.TB) string {
	t.Helper()
	probeOnce.Do(func() {
		dir, err := testutil.ProcessDir("confineprobe")
		if err != nil {
			probeErr = err
			return
		}
		probePath = filepath.Join(dir, "confineprobe")
		cmd := exec.Command("go", "build", "-o", probePath, "./internal/e2e/testdata/confineprobe")
		cmd.Dir = testutil.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			probeErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if probeErr != nil {
		t.Fatalf("build confineprobe: %v", probeErr)
	}
	return probePath
}

// TestGuardSuggestionRunsConfined: the form the Bash guard asks for (the
// JSON written to a file first) must work where the model will run it,
// in the confined bash tool, whose only writable place outside the
// agent's allow-list is its private $TMPDIR. The refusal's allowed form is
// run as given and the JSON must reach a loopback sink.
func TestGuardSuggestionRunsConfined(t *testing.T) {
	t.Parallel()
	testutil.NeedTool(t, "curl", "", "make deps (scripts/deps/60-guard-sink.sh)")
	got := make(chan string, 4)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
	}))
	defer sink.Close()
	c := testutil.Serve(t, "--project-dir", t.TempDir(), "--agent", "tester")
	res := testutil.CallTool(t, c, "bash", map[string]any{"command": `curl -s -d '{"a":1}' ` + sink.URL})
	text := res.Text()
	_, allowed, ok := strings.Cut(text, "Allowed form:\n")
	if !res.IsError || !ok {
		t.Fatalf("inline JSON not refused with an allowed form: %s", text)
	}
	allowed = strings.TrimSpace(allowed)
	if len(got) != 0 {
		t.Fatal("the refused command reached the sink")
	}
	out := runBash(t, c, allowed)
	if !out.OK || !out.Sandbox.Confined {
		t.Fatalf("the allowed form %q failed confined: %+v", allowed, out)
	}
	select {
	case body := <-got:
		if body != `{"a":1}` {
			t.Fatalf("sink got %q, want the JSON", body)
		}
	default:
		t.Fatalf("the allowed form %q ran but nothing reached the sink: %+v", allowed, out)
	}
}
