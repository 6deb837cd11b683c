package claudecli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// Install is the command that installs the pinned Claude CLI into .deps/.
const Install = "make deps (or: bash scripts/deps/40-claude-code.sh)"

var version struct {
	once sync.Once
	out  string
	err  error
}

// Binary returns the claude executable: $TOOLHOST_CLAUDE, else the one
// scripts/deps installed in .deps/, else claude on PATH. When it is missing
// (or is npm's placeholder whose postinstall never ran) the test is skipped
// naming the install command, and fails instead under CI=true.
func Binary(t testing.TB) string {
	t.Helper()
	bin := testutil.NeedTool(t, "claude", "TOOLHOST_CLAUDE", Install)
	version.once.Do(func() {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		version.out, version.err = strings.TrimSpace(string(out)), err
	})
	if version.err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("claude at %s does not run (%v): %s; %s", bin, version.err, version.out, Install)
		}
		t.Skipf("claude at %s does not run (%v): %s; run: %s", bin, version.err, version.out, Install)
	}
	return bin
}

// Version returns what `claude --version` printed ("2.1.332 (Claude Code)").
func Version(t testing.TB) string {
	t.Helper()
	Binary(t)
	return version.out
}

// RunOptions says how to run `claude -p`.
type RunOptions struct {
	Prompt         string   // the user prompt; "go" when empty
	Dir            string   // working directory of claude; a temp dir when empty
	MCPConfig      []byte   // written to a file, passed with --mcp-config and --strict-mcp-config
	Settings       []byte   // written to a file, passed with --settings (hooks, permissions)
	PermissionMode string   // --permission-mode: "" (the CLI's default), "bypassPermissions", "acceptEdits", …
	AllowedTools   []string // --allowedTools
	Args           []string // any other flags, after the ones above
	Env            []string // extra environment (KEY=VALUE), after the harness's
	Timeout        time.Duration
	// Trust are folders the CLI's private config records as trusted
	// (projects[dir].hasTrustDialogAccepted, what accepting the trust
	// prompt writes): it loads a project's agents' MCP servers and hooks
	// and its permission rules only there.
	Trust []string
	// AfterExit, when set, runs once the CLI has exited and before the
	// harness kills whatever it left running, so a test can look for
	// leftovers itself; running lists the processes still carrying the
	// run's environment (every process the CLI started that kept it), as
	// "pid N: command line".
	AfterExit func(running func() []string)
}

// DefaultTimeout bounds a Run whose options set none.
const DefaultTimeout = 2 * time.Minute

// Result is what one Run did.
type Result struct {
	ExitCode int
	Stdout   string
	Stderr   string
	Events   []map[string]any // the stream-json lines of stdout, decoded
	Home     string           // the private HOME the CLI ran with (its config dir is Home/.claude)
}

// Event returns the first stream-json event of type typ (and subtype,
// when not empty), or nil.
func (r *Result) Event(typ, subtype string) map[string]any {
	for _, e := range r.Events {
		if e["type"] == typ && (subtype == "" || e["subtype"] == subtype) {
			return e
		}
	}
	return nil
}

// Final returns the closing "result" event (subtype, is_error, result,
// permission_denials, …), or nil when the CLI wrote none.
func (r *Result) Final() map[string]any { return r.Event("result", "") }

// String is a summary for failure messages: exit code, the final result
// and the end of stderr.
func (r *Result) String() string {
	final, _ := json.Marshal(r.Final())
	stderr := r.Stderr
	if len(stderr) > 4000 {
		stderr = "…" + stderr[len(stderr)-4000:]
	}
	return "exit " + strconv.Itoa(r.ExitCode) + "; result: " + string(final) + "\nstderr:\n" + stderr
}

// Run runs `claude -p PROMPT --output-format stream-json --verbose …`
// against m: ANTHROPIC_BASE_URL=m.URL, a dummy ANTHROPIC_API_KEY,
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, no API retries, and a private
// HOME and CLAUDE_CONFIG_DIR, with the caller's ANTHROPIC_* and CLAUDE*
// variables removed. The CLI runs in its own process group; on o.Timeout the
// CLI and every process it started are killed and the test fails; whatever
// it left running (MCP servers, background Bash jobs) is killed when it
// exits.
func Run(t testing.TB, m *Model, o RunOptions) *Result {
	t.Helper()
	bin := Binary(t)
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(tmp, "work")
		if err := os.Mkdir(o.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if o.Prompt == "" {
		o.Prompt = "go"
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if len(o.Trust) > 0 {
		projects := map[string]any{}
		for _, d := range o.Trust {
			projects[d] = map[string]any{"hasTrustDialogAccepted": true}
		}
		b, _ := json.Marshal(map[string]any{"projects": projects})
		if err := os.WriteFile(filepath.Join(home, ".claude", ".claude.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-p", o.Prompt, "--output-format", "stream-json", "--verbose"}
	write := func(name string, data []byte) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if o.MCPConfig != nil {
		args = append(args, "--mcp-config", write("mcp.json", o.MCPConfig), "--strict-mcp-config")
	}
	if o.Settings != nil {
		args = append(args, "--settings", write("settings.json", o.Settings))
	}
	if o.PermissionMode != "" {
		args = append(args, "--permission-mode", o.PermissionMode)
	}
	if len(o.AllowedTools) > 0 {
		args = append(args, "--allowedTools", strings.Join(o.AllowedTools, ","))
	}
	args = append(args, o.Args...)

	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = o.Dir
	marker := runMarker + "=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// The CLI keeps per-project state and its messaging socket in the temp
	// and runtime dirs; a short private one keeps them out of /tmp and
	// under the socket path limit.
	rt, err := os.MkdirTemp("", "claudecli-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	env := append(environ(home, m.URL), "TMPDIR="+rt, "CLAUDE_CODE_TMPDIR="+rt, "XDG_RUNTIME_DIR="+rt)
	cmd.Env = append(append(env, o.Env...), marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		killMarked(marker)
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// A grandchild holding stdout open must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start claude: %v", err)
	}
	err = cmd.Wait()
	if o.AfterExit != nil && ctx.Err() == nil {
		o.AfterExit(func() []string { return describe(markedPIDs(marker)) })
	}
	// Whatever the CLI started and left running (an MCP server that ignored
	// EOF, a background Bash job) goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	killMarked(marker)
	res := &Result{Stdout: stdout.String(), Stderr: stderr.String(), Home: home, ExitCode: cmd.ProcessState.ExitCode()}
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			res.Events = append(res.Events, e)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("claude did not finish within %v (process group killed); %d main and %d side requests, unknown endpoints %v\n%s",
			o.Timeout, len(m.Requests()), len(m.SideRequests()), m.Unknown(), res)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("claude: %v\n%s", err, res)
	}
	return res
}

// runMarker is set, with a value unique to the run, in the CLI's
// environment, which every process it starts inherits. The CLI starts its
// Bash commands in their own process groups, so killing the CLI's group
// does not reach them, and once the CLI is gone its orphans cannot be found
// by parentage: the marker finds them.
const runMarker = "CLAUDECLI_RUN"

// killMarked SIGKILLs every process whose environment holds marker, until
// none is left (a process may fork while it is being killed).
func killMarked(marker string) {
	for range 10 {
		killed := 0
		for _, pid := range markedPIDs(marker) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if killed == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// markedPIDs are the processes (other than this one) whose environment
// holds marker. A zombie has no environment left: it is not listed.
func markedPIDs(marker string) []int {
	want := []byte(marker)
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// describe names processes as "pid N: command line" (a process gone since
// is left out).
func describe(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		out = append(out, "pid "+strconv.Itoa(pid)+": "+strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))))
	}
	return out
}

// environ is the CLI's environment: the test's, less what would point the
// CLI at a real account, config or parent session, plus the harness's.
func environ(home, url string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE") || k == "HOME" || k == "IS_SANDBOX" ||
			strings.HasPrefix(k, "XDG_") || k == "TMPDIR" || strings.HasPrefix(k, "OTEL_") || k == "DISABLE_TELEMETRY" || k == runMarker {
			continue
		}
		env = append(env, kv)
	}
	if os.Geteuid() == 0 {
		// The CLI refuses bypassPermissions as root unless told it runs in
		// a sandbox, which a test's private HOME and temp dirs are.
		env = append(env, "IS_SANDBOX=1")
	}
	return append(env,
		"HOME="+home,
		"CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL="+url,
		"ANTHROPIC_API_KEY=sk-ant-claudecli-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// A failed request fails the run now instead of after minutes of backoff.
		"CLAUDE_CODE_MAX_RETRIES=0",
	)
}
