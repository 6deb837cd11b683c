package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/claudecode"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// sandboxScript is the small shell script of BenchmarkCommandSandboxes: a
// loop in the shell, a fork of a program, a read and a write to /dev/null.
const sandboxScript = `x=0; for i in 1 2 3; do x=$((x+i)); done; cat /etc/hostname >/dev/null; echo $x >/dev/null`

// BenchmarkCommandSandboxes is toolhost's confinement next to bubblewrap's,
// the sandbox Codex and Claude Code's sandbox runtime confine commands with
// on Linux: in one interleaved run, what each way adds to `true` and to a
// small `sh -c` script (sandboxScript), against the same command run
// unconfined, as the median of b.N rounds:
//
//   - confine: `toolhost confine` (a whole toolhost start);
//   - helper: toolhost-confine, the small helper beside it;
//   - hold: toolhost-confine --hold, what the hook's rewrite runs;
//   - hook: the hook's whole rewritten Bash command (hold with
//     --cwd-report, keeping the shell's directory), run by bash as the CLI runs it,
//     against `bash -c CMD`: what a Claude CLI user pays per command;
//   - tool: the bash tool over a real `serve` (a tester session that
//     confines against one whose sandbox.commands is off);
//   - bwrap: bwrap with the tester's write allow-list as bind mounts.
//
// The bwrap line is `--ro-bind / / --bind R R (each write root R) --tmpfs
// /tmp --dev /dev --proc /proc --unshare-pid --die-with-parent`:
// equivalent in what it lets the command write (the write roots, a private
// /tmp, the usual devices) and in keeping it from signalling processes
// outside its own (a pid namespace; toolhost: Landlock's signal scope).
// Not equivalent: toolhost also drops capabilities, filters the
// environment, hides its secrets from reads, and keeps TCP to the agent's
// network rules (seccomp and Landlock), which bwrap would need a network
// namespace for; bwrap gives the command a mount and pid namespace of its
// own, which toolhost does not. Run as root, bwrap needs no user
// namespace; unprivileged it would add one.
//
// Each way reports its added median (added-<way>-<cmd>-ms) and, against
// bwrap's, the ratio x<way>/bwrap-<cmd> (the target: ≤ 0.5):
//
//	go test -run '^$' -bench CommandSandboxes -benchtime 200x ./internal/e2e
func BenchmarkCommandSandboxes(b *testing.B) {
	bwrap := testutil.NeedTool(b, "bwrap", "", "make deps (scripts/deps/96-bubblewrap.sh)")
	bin, helper := testutil.Toolhost(b), testutil.ConfineHelper(b)
	dir := b.TempDir()
	roots := []string{"units/a/tests", "reports", "memory/devloop/tester"}
	for _, r := range roots {
		if err := os.MkdirAll(filepath.Join(dir, r), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	work := filepath.Join(dir, "units/a")
	bwrapArgs := []string{"--ro-bind", "/", "/"}
	for _, r := range roots {
		bwrapArgs = append(bwrapArgs, "--bind", filepath.Join(dir, r), filepath.Join(dir, r))
	}
	bwrapArgs = append(bwrapArgs, "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent", "--")
	agent := []string{"--agent", "devloop-tester", "--project-dir", dir, "--"}

	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	cmds := []struct {
		name string
		argv []string
	}{{"true", []string{truePath}}, {"sh", []string{"sh", "-c", sandboxScript}}}

	off := writeAgents(b, func(a map[string]any) { a["sandbox"].(map[string]any)["commands"] = "off" })
	serve := func(args ...string) *stdioclient.Client {
		return testutil.Serve(b, append([]string{"--project-dir", dir, "--agent", "tester", "--log-level", "warn"}, args...)...)
	}
	confined, plain := serve(), serve("--agents", off)

	run := func(argv []string) time.Duration {
		c := exec.Command(argv[0], argv[1:]...)
		c.Dir = work
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		t0 := time.Now()
		if err := c.Run(); err != nil {
			b.Fatalf("%q: %v %s", argv, err, out.String())
		}
		return time.Since(t0)
	}
	call := func(c *stdioclient.Client, argv []string) time.Duration {
		t0 := time.Now()
		r, err := c.CallTool(context.Background(), "bash", map[string]any{"command": claudecode.ShellJoin(argv)}, nil)
		d := time.Since(t0)
		if err != nil || r.IsError {
			b.Fatalf("bash: %v %+v", err, r)
		}
		return d
	}
	// ways are measured as pairs: the confined run and its unconfined
	// baseline, one right after the other.
	type way struct {
		name          string
		confined, raw func(argv []string) time.Duration
	}
	wrap := func(prefix ...string) func([]string) time.Duration {
		return func(argv []string) time.Duration { return run(append(append([]string(nil), prefix...), argv...)) }
	}
	hooked := map[string]string{}
	for _, c := range cmds {
		hooked[claudecode.ShellJoin(c.argv)] = hookRewrite(b, bin, dir, work, claudecode.ShellJoin(c.argv))
	}
	ways := []way{
		{"confine", wrap(append([]string{bin, "confine"}, agent...)...), run},
		{"helper", wrap(append([]string{helper}, agent...)...), run},
		{"hold", wrap(append([]string{helper, "--hold"}, agent...)...), run},
		{"hook", func(argv []string) time.Duration {
			return run([]string{"bash", "-c", hooked[claudecode.ShellJoin(argv)]})
		}, func(argv []string) time.Duration { return run([]string{"bash", "-c", claudecode.ShellJoin(argv)}) }},
		{"tool", func(argv []string) time.Duration { return call(confined, argv) },
			func(argv []string) time.Duration { return call(plain, argv) }},
		{"bwrap", wrap(append([]string{bwrap}, bwrapArgs...)...), run},
	}
	// Warm each once (the first bash command also starts a warden).
	for _, w := range ways {
		for _, c := range cmds {
			w.confined(c.argv)
			w.raw(c.argv)
		}
	}
	added := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for j := range ways {
			// Rotate the order so no way always follows the same one.
			w := ways[(i+j)%len(ways)]
			for _, c := range cmds {
				key := w.name + "-" + c.name
				if i%2 == 0 {
					on := w.confined(c.argv)
					added[key] = append(added[key], on-w.raw(c.argv))
				} else {
					raw := w.raw(c.argv)
					added[key] = append(added[key], w.confined(c.argv)-raw)
				}
			}
		}
	}
	b.StopTimer()
	for _, c := range cmds {
		bw := median(added["bwrap-"+c.name])
		b.ReportMetric(ms(bw), "added-bwrap-"+c.name+"-ms")
		for _, w := range ways[:len(ways)-1] {
			m := median(added[w.name+"-"+c.name])
			b.ReportMetric(ms(m), "added-"+w.name+"-"+c.name+"-ms")
			b.ReportMetric(float64(m)/float64(bw), "x"+w.name+"/bwrap-"+c.name)
		}
	}
}

// hookRewrite is the command the hook rewrites the CLI's Bash command to,
// for the devloop-tester in dir, the CLI's shell being in cwd.
func hookRewrite(b *testing.B, bin, dir, cwd, command string) string {
	b.Helper()
	payload, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": cwd,
		"tool_input": map[string]any{"command": command}})
	hook := exec.Command(bin, "hook", "pretooluse", "--agent", "devloop-tester", "--project-dir", dir)
	hook.Stdin = bytes.NewReader(payload)
	out, err := hook.Output()
	if err != nil {
		b.Fatalf("hook: %v", err)
	}
	var answer struct {
		HookSpecificOutput struct {
			UpdatedInput struct {
				Command string `json:"command"`
			} `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &answer); err != nil || answer.HookSpecificOutput.UpdatedInput.Command == "" {
		b.Fatalf("hook answered %q (%v), want a rewritten Bash command", out, err)
	}
	return answer.HookSpecificOutput.UpdatedInput.Command
}
