package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/testutil"
)

// eachSource runs body for every identity and every source, in its own
// stage.
func eachSource(t *testing.T, o stageOptions, body func(t *testing.T, st *stage, src source)) {
	for _, id := range identities(t) {
		t.Run(id.name, func(t *testing.T) {
			for _, src := range sources {
				t.Run(src.name, func(t *testing.T) {
					body(t, newStage(t, id, o), src)
				})
			}
		})
	}
}

func mustRun(t *testing.T, r probeReport) {
	t.Helper()
	if r.refused != "" || !r.done() {
		t.Fatalf("the probe did not run to its end: refused %q, output %q", r.refused, r.raw)
	}
}

// TestConfinedProcessHoldsNoCapability: root's capabilities are gone from
// every confined process — it cannot make a file immutable (not one of its
// own, not toolhost's audit trail), give a file away or read a file only
// another user may read — and a program with file capabilities gains none
// (no_new_privs). Unconfined, root does all of it.
func TestConfinedProcessHoldsNoCapability(t *testing.T) {
	t.Parallel()
	eachSource(t, stageOptions{}, func(t *testing.T, st *stage, src source) {
		own := filepath.Join(st.project, "integration/cases/c.json")
		audit := filepath.Join(st.project, ".toolhost/audit.ndjson")
		others := filepath.Join(st.outside, "others")
		t.Cleanup(func() { clearImmutable(t, own); clearImmutable(t, audit) })
		args := []string{"-caps", "-chattr", own, "-chattr", audit, "-chown", own, "-read", others}
		if st.id.root() {
			control := st.unconfined("-chattr", own, "-read", others)
			if control.result("chattr "+own) == "ok" && !immutable(t, own) {
				t.Fatal("control: the probe's chattr +i had no effect")
			}
			clearImmutable(t, own)
			if !strings.Contains(control.raw, "others-only-content") {
				t.Fatalf("control: root could not read another user's file unconfined: %s", control.raw)
			}
		}
		progs := []string{st.probe}
		if !st.id.root() {
			progs = append(progs, capableCopy(t, st))
		}
		for _, prog := range progs {
			r := src.run(withProgram(st, prog), args)
			mustRun(t, r)
			if immutable(t, own) || immutable(t, audit) {
				t.Errorf("%s: a confined process made a file immutable: %s", prog, r.raw)
			}
			var fi syscall.Stat_t
			if err := syscall.Stat(own, &fi); err != nil || fi.Uid == 4242 {
				t.Errorf("%s: a confined process gave %s away (uid %d)", prog, own, fi.Uid)
			}
			if strings.Contains(r.raw, "others-only-content") {
				t.Errorf("%s: a confined process read a file only another user may read", prog)
			}
			caps := r.lines["caps "].Value
			for _, set := range []string{"CapInh: 0000000000000000", "CapPrm: 0000000000000000", "CapEff: 0000000000000000", "CapAmb: 0000000000000000", "NoNewPrivs: 1"} {
				if !strings.Contains(caps, set) {
					t.Errorf("%s: capability report %q lacks %q", prog, caps, set)
				}
			}
			if st.id.root() && !strings.Contains(caps, "CapBnd: 0000000000000000") {
				t.Errorf("root's bounding set was not emptied: %q", caps)
			}
		}
	})
}

// withProgram is the stage with another probe binary (a copy with file
// capabilities).
func withProgram(st *stage, prog string) *stage {
	c := *st
	c.probe = prog
	return &c
}

// capableCopy is a copy of the probe with file capabilities that would let
// an unprivileged user read every file and change owners and flags.
func capableCopy(t *testing.T, st *stage) string {
	t.Helper()
	setcap := testutil.NeedTool(t, "setcap", "", "apt-get install libcap2-bin (scripts/deps/05-authority.sh)")
	p := filepath.Join(st.base, "capable-probe")
	if err := copyFile(st.probe, p, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(setcap, "cap_dac_read_search,cap_chown,cap_linux_immutable+ep", p).CombinedOutput(); err != nil {
		t.Fatalf("setcap: %v %s", err, out)
	}
	control := withProgram(st, p).unconfined("-read", filepath.Join(st.outside, "others"))
	if !strings.Contains(control.raw, "others-only-content") {
		t.Fatalf("control: the file capabilities gave the unconfined copy nothing: %s", control.raw)
	}
	return p
}

// TestConfinedProcessCannotTypeIntoTheTerminal: with toolhost started from
// a terminal, a confined process has no controlling terminal (/dev/tty
// cannot be opened) and cannot push input into that terminal — not
// through /dev/tty, not by opening the terminal's device, not through a
// descriptor it inherited — so nothing waits for the shell when toolhost
// exits. Unconfined, the same probe types a command line into it.
func TestConfinedProcessCannotTypeIntoTheTerminal(t *testing.T) {
	t.Parallel()
	eachSource(t, stageOptions{}, func(t *testing.T, st *stage, src source) {
		control := st.unconfined("-tiocsti", "/dev/tty")
		injected := st.tty.pending(t)
		if control.result("tiocsti /dev/tty") != "ok" || !strings.Contains(injected, "echo PWNED") {
			t.Logf("control: TIOCSTI does not work on this kernel even unconfined (dev.tty.legacy_tiocsti=0?): %s", control.raw)
		}
		args := []string{"-caps", "-tiocsti", "/dev/tty", "-tiocsti", st.tty.path}
		if src.name == "hook" {
			args = append(args, "-tiocsti", "fd:0")
		}
		r := src.run(st, args)
		mustRun(t, r)
		if got := st.tty.pending(t); got != "" {
			t.Errorf("input is waiting in the terminal for the human's shell: %q (probe: %s)", got, r.raw)
		}
		if caps := r.lines["caps "].Value; !strings.Contains(caps, "tty=open /dev/tty: no such device or address") {
			t.Errorf("the process has a controlling terminal: %q", caps)
		}
	})
}

// TestConfinedProcessInheritsNoDescriptor: a descriptor open in the shell
// that started toolhost (`exec 7>>file`) reaches no confined process:
// writing to every descriptor it holds leaves the file as it was.
// Unconfined, the probe writes the file through it.
func TestConfinedProcessInheritsNoDescriptor(t *testing.T) {
	t.Parallel()
	eachSource(t, stageOptions{}, func(t *testing.T, st *stage, src source) {
		log := filepath.Join(st.outside, "fd7.log")
		st.unconfined("-fds")
		if b, _ := os.ReadFile(log); !strings.Contains(string(b), "inherited descriptor") {
			t.Fatalf("control: the unconfined probe could not write through descriptor 7: %q", b)
		}
		if err := os.Truncate(log, 0); err != nil {
			t.Fatal(err)
		}
		r := src.run(st, []string{"-fds"})
		mustRun(t, r)
		if b, _ := os.ReadFile(log); len(b) != 0 {
			t.Errorf("a confined process wrote through an inherited descriptor: %q (it held %s)", b, r.lines["fds "].Value)
		}
	})
}

// TestConfinedProcessSeesNoSecret: the human's credentials in toolhost's
// environment reach no confined process, neither in its own environment
// nor through /proc of toolhost (or of `toolhost confine` behind the
// hook); what the agent's sandbox.env names (MY_*) passes to its commands
// and units, never a credential-looking name the pattern also matches
// (MY_PASSWORD); an upstream gets only its entry's. The audit row of a
// command names what it received.
func TestConfinedProcessSeesNoSecret(t *testing.T) {
	t.Parallel()
	eachSource(t, stageOptions{}, func(t *testing.T, st *stage, src source) {
		args := []string{"-env", "MY_SETTING", "-read", "/proc/{ppid}/environ"}
		for k := range humanSecrets {
			args = append(args, "-env", k)
		}
		r := src.run(st, args)
		mustRun(t, r)
		for k, v := range humanSecrets {
			if strings.Contains(r.raw, v) {
				t.Errorf("the process saw %s: %s", k, r.raw)
			}
		}
		wantSetting := src.name != "upstream"
		if got := r.lines["env MY_SETTING"].Value == passedSetting; got != wantSetting {
			t.Errorf("MY_SETTING passed = %v, want %v (sandbox.env of the agent): %s", got, wantSetting, r.raw)
		}
		if src.name != "bash tool" {
			return
		}
		rows := bashAuditSandbox(t, st.project)
		if len(rows) == 0 || !strings.Contains(rows[len(rows)-1], " MY_SETTING") || strings.Contains(rows[len(rows)-1], "ANTHROPIC") {
			t.Errorf("audit sandbox %q, want the variables passed named, MY_SETTING among them and no secret", rows)
		}
	})
}

// TestNetworkRulesHoldForEverySocket: with a connect rule that allows one
// port, every way to make a TCP connection to another port fails —
// connect(2), a Multipath TCP socket, TCP Fast Open (sendto with
// MSG_FASTOPEN, which Landlock does not check) and io_uring's SOCKET and
// CONNECT operations — and nothing reaches the listener there, while the
// allowed port works. Unconfined, each of the four reaches it.
func TestNetworkRulesHoldForEverySocket(t *testing.T) {
	t.Parallel()
	allowed, denied := newSink(t), newSink(t)
	connect := agents.Ports{}
	if err := connect.UnmarshalJSON([]byte(fmt.Sprintf("[%d]", allowed.port))); err != nil {
		t.Fatal(err)
	}
	o := stageOptions{
		agent: func(a map[string]any) {
			a["sandbox"].(map[string]any)["network"] = map[string]any{"connect": []int{allowed.port}, "bind": "any", "unitBind": "own"}
		},
		upstream: policy.UpstreamSandbox{Connect: connect},
	}
	d := strconv.Itoa(denied.port)
	ways := []string{"connect", "mptcp", "tfo", "uring"}
	var args []string
	for _, w := range ways {
		args = append(args, "-"+w, d)
	}
	eachSource(t, o, func(t *testing.T, st *stage, src source) {
		control := st.unconfined(args...)
		if got := denied.reached(t); len(got) != len(ways) {
			t.Fatalf("control: %d of %d ways reached the listener unconfined: %s", len(got), len(ways), control.raw)
		}
		r := src.run(st, append(args, "-connect", strconv.Itoa(allowed.port)))
		mustRun(t, r)
		if got := denied.reached(t); len(got) != 0 {
			t.Errorf("%d connections reached a port the rules deny: %s", len(got), r.raw)
		}
		for _, w := range ways {
			if r.result(w+" "+d) == "ok" {
				t.Errorf("%s to a denied port succeeded", w)
			}
		}
		if got := allowed.reached(t); len(got) != 1 {
			t.Errorf("the allowed port got %d connections, want 1: %s", len(got), r.raw)
		}
	})
}

// TestRequireRefusesWithoutSignalScoping: on a kernel without signal
// scoping (Landlock ABI 5, simulated), sandbox.commands "require" refuses
// to start anything, with the reason — the command, the unit, the
// rewritten Bash and the upstream server — so none of them can kill
// toolhost, which stays up.
func TestRequireRefusesWithoutSignalScoping(t *testing.T) {
	t.Parallel()
	eachSource(t, stageOptions{env: []string{"TOOLHOST_LANDLOCK_ABI=5"}}, func(t *testing.T, st *stage, src source) {
		ran := filepath.Join(st.project, "integration/cases/ran")
		args := []string{"-write", ran, "-sigkill", "{ppid}"}
		r := src.run(st, args)
		if r.refused == "" || !strings.Contains(r.refused, "scoping signals") {
			t.Errorf("not refused with the reason: refused %q, output %q", r.refused, r.raw)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Error("the refused process ran")
		}
	})
}

// TestHostileUpstream: an upstream server is a process toolhost starts and
// gets the same treatment: with its default sandbox it cannot write outside
// its private temp dir, signal toolhost, or connect anywhere.
func TestHostileUpstream(t *testing.T) {
	t.Parallel()
	reach := newSink(t)
	for _, id := range identities(t) {
		t.Run(id.name, func(t *testing.T) {
			st := newStage(t, id, stageOptions{})
			c := st.serve()
			if !upstreamReady(t, c) {
				t.Fatalf("the fake upstream's probe tool is not served; stderr:\n%s", c.Stderr())
			}
			pid := strconv.Itoa(c.Process().PID)
			evil, own := filepath.Join(st.outside, "evil"), filepath.Join(st.project, "integration/cases/evil")
			res := testutil.CallTool(t, c, "fake__probe", map[string]any{"argv": []string{st.probe,
				"-write", evil, "-write", own, "-sigkill", pid, "-connect", strconv.Itoa(reach.port), "-exit"}})
			r := parseProbe(res.Text())
			mustRun(t, r)
			for _, p := range []string{evil, own} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("the upstream wrote %s", p)
				}
			}
			if c.Process().PID == 0 || syscall.Kill(c.Process().PID, 0) != nil {
				t.Fatal("the upstream killed toolhost")
			}
			if got := reach.reached(t); len(got) != 0 {
				t.Errorf("the upstream connected out: %q", got)
			}
			if ok := testutil.CallTool(t, c, "fake__probe", map[string]any{"argv": []string{"/bin/sh", "-c", `echo x > "$TMPDIR/own" && cat "$TMPDIR/own"`}}); !strings.HasPrefix(ok.Text(), "x") {
				t.Errorf("the upstream could not write its own temp dir: %s", ok.Text())
			}
		})
	}
}

// TestOrdinaryCommandsRunConfined: what agents run every day still runs,
// unrefused, as root and as an unprivileged user: npm test, go test, git,
// make, and a unit serving on its own port.
func TestOrdinaryCommandsRunConfined(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	npm := testutil.NeedTool(t, "npm", "", "apt-get install npm")
	for _, id := range identities(t) {
		t.Run(id.name, func(t *testing.T) {
			st := newStage(t, id, stageOptions{agent: func(a map[string]any) {
				a["sandbox"].(map[string]any)["env"] = []string{"MY_*", "GOROOT", "GOPATH", "GOFLAGS"}
			}})
			w := filepath.Join(st.project, "integration/cases/w")
			mkdir(t, w)
			write(t, filepath.Join(w, "package.json"), `{"name":"w","version":"1.0.0","scripts":{"test":"node -e \"console.log('npm-test-ran')\""}}`+"\n")
			write(t, filepath.Join(w, "go.mod"), "module w\n\ngo 1.26\n")
			write(t, filepath.Join(w, "w_test.go"), "package w\n\nimport \"testing\"\n\nfunc TestW(t *testing.T) { t.Log(\"go-test-ran\") }\n")
			write(t, filepath.Join(w, "Makefile"), "all:\n\t@echo make-ran\n")
			if id.uid >= 0 {
				chownTree(t, w, id.uid)
			}
			c := st.serve()
			for name, command := range map[string]string{
				"npm test": `npm_config_cache="$TMPDIR/npm" ` + shellJoin([]string{npm}) + ` test --silent`,
				"go test":  `GOCACHE="$TMPDIR/gocache" GOPATH="$TMPDIR/gopath" GOTOOLCHAIN=local ` + shellJoin([]string{goBin}) + ` test -count=1 -v ./...`,
				"git":      `git init -q . && git add Makefile && git -c user.name=a -c user.email=a@b commit -qm one && git log --oneline | wc -l`,
				"make":     `make`,
			} {
				// A cold build cache on a loaded machine takes a while:
				// longer than CallTool's minute.
				ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
				res, err := c.CallTool(ctx, "bash", map[string]any{"command": "cd integration/cases/w && " + command, "timeout_ms": 300000}, nil)
				cancel()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var out bashResult
				testutil.DecodeResult(t, "bash", res, &out)
				if res.IsError || !out.OK {
					t.Errorf("%s failed confined: %s %+v", name, res.Text(), out)
				}
			}
			port := pickPort(t, c, "srv")
			res := spawnUnits(t, c, map[string]any{"action": "start", "units": []map[string]any{{"id": "srv", "cwd": "integration/cases", "argv": []string{st.probe, "-bind", "0"}}}})
			if res.Units[0].State != "running" {
				t.Fatalf("the unit did not start: %+v", res.Units[0])
			}
			r := runUnitLog(t, st, "srv")
			if r.result("bind "+strconv.Itoa(port)) != "ok" {
				t.Errorf("the unit could not listen on its own port %d: %s", port, r.raw)
			}
			spawnUnits(t, c, map[string]any{"action": "stop", "units": []map[string]any{{"id": "srv"}}})
		})
	}
}

// runUnitLog waits for a unit's probe report in its stdout log.
func runUnitLog(t *testing.T, st *stage, unit string) probeReport {
	t.Helper()
	log := filepath.Join(st.project, "integration/logs", unit+".out.log")
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

// TestToolhostServersOutOfReach: while toolhost's own servers run — a
// dashboard and a loopback serve --http — no confined process can connect
// to them, whatever its connect rule ("any", or a list naming their port),
// while any other port works; an agent with network.reachToolhost can.
func TestToolhostServersOutOfReach(t *testing.T) {
	t.Parallel()
	other := newSink(t)
	anyPorts := agents.Ports{}
	if err := anyPorts.UnmarshalJSON([]byte(`"any"`)); err != nil {
		t.Fatal(err)
	}
	for _, id := range identities(t) {
		t.Run(id.name, func(t *testing.T) {
			for _, reach := range []bool{false, true} {
				st := newStage(t, id, stageOptions{
					agent: func(a map[string]any) {
						a["sandbox"].(map[string]any)["network"] = map[string]any{"connect": "any", "bind": "any", "unitBind": "own", "reachToolhost": reach}
					},
					upstream: policy.UpstreamSandbox{Connect: anyPorts},
				})
				dash, mcp := st.startServers(t)
				args := []string{"-connect", dash, "-connect", mcp, "-connect", strconv.Itoa(other.port)}
				for _, src := range sources {
					if reach && src.name == "upstream" {
						continue // reachToolhost is an agent's setting
					}
					r := src.run(st, args)
					mustRun(t, r)
					for _, port := range []string{dash, mcp} {
						if got := r.result("connect " + port); (got == "ok") != reach {
							t.Errorf("%s (reachToolhost %v): connect to toolhost's server on %s: %s", src.name, reach, port, got)
						}
					}
					if got := other.reached(t); len(got) != 1 {
						t.Errorf("%s: another port got %d connections, want 1: %s", src.name, len(got), r.raw)
					}
				}
			}
		})
	}
}

// startServers starts toolhost dashboard and serve --http on loopback as
// the stage's user and returns their ports.
func (st *stage) startServers(t *testing.T) (dash, mcp string) {
	t.Helper()
	start := func(pattern string, args ...string) string {
		argv := st.as(append([]string{st.bin}, args...)...)
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = st.env()
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.Stderr = c.Stdout
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		})
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), pattern); i >= 0 {
				rest := sc.Text()[i+len(pattern):]
				port := strings.FieldsFunc(rest, func(r rune) bool { return r < '0' || r > '9' })[0]
				go func() {
					for sc.Scan() {
					}
				}()
				return port
			}
		}
		t.Fatalf("%v: no address in its output", args)
		return ""
	}
	dash = start("http://127.0.0.1:", "dashboard", "--project-dir", st.project)
	mcp = start("http://127.0.0.1:", "serve", "--project-dir", st.project, "--agent", "pm", "--http", "127.0.0.1:0")
	return dash, mcp
}

// TestSecretsOutOfReach: toolhost's secrets directory (the bearer token of
// serve --http and any other secret toolhost keeps) can be read, listed or
// written beneath by no confined process, not even through a symlink
// planted in a directory it may write, while the files beside it stay
// readable. Unconfined, the same user reads the token.
func TestSecretsOutOfReach(t *testing.T) {
	t.Parallel()
	eachSource(t, stageOptions{}, func(t *testing.T, st *stage, src source) {
		state := filepath.Join(st.home, ".local/state/toolhost")
		dir := filepath.Join(state, "secrets")
		mkdir(t, dir)
		token := filepath.Join(dir, "http-token")
		write(t, token, "secret-token-6\n")
		write(t, filepath.Join(state, "beside"), "beside-content\n")
		link := filepath.Join(st.project, "integration/cases/link")
		if err := os.Symlink(dir, link); err != nil {
			t.Fatal(err)
		}
		if st.id.uid >= 0 {
			chownTree(t, st.home, st.id.uid)
		}
		if err := os.Chmod(token, 0o600); err != nil {
			t.Fatal(err)
		}
		if control := st.unconfined("-read", token); !strings.Contains(control.raw, "secret-token-6") {
			t.Fatalf("control: the user cannot read its own token unconfined: %s", control.raw)
		}
		planted := filepath.Join(dir, "planted")
		r := src.run(st, []string{"-read", token, "-read", link + "/http-token", "-list", dir, "-list", link,
			"-write", planted, "-read", filepath.Join(state, "beside")})
		mustRun(t, r)
		if strings.Contains(r.raw, "secret-token-6") || strings.Contains(r.lines["list "+dir].Value+r.lines["list "+link].Value, "http-token") {
			t.Errorf("a confined process read or listed the secrets: %s", r.raw)
		}
		if _, err := os.Stat(planted); err == nil {
			t.Error("a confined process planted a file among the secrets")
		}
		if !strings.Contains(r.raw, "beside-content") {
			t.Errorf("the file beside the secrets was not readable: %s", r.raw)
		}
	})
}
