package confine

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/procs"
)

// TestHolderKeepsItsCommandInReach: a held command cannot end its holder
// (SIGKILL to its parent fails), cannot leave its group (a setsid'd job
// stays in it), is registered with its write roots and the holder's pid
// while it runs, and — as the bash tool's HoldCall — leaves nothing
// running and no registration once the holder is done, however the job it
// left behind tries to stay (its own session, SIGTERM ignored).
func TestHolderKeepsItsCommandInReach(t *testing.T) {
	t.Parallel()
	holderKeepsItsCommandInReach(t, false)
}

// TestHolderKeepsItsCommandInReachWhileAServerRuns is the same while a
// toolhost server is registered: then the holder's nested layer is the
// ruleset keeping the command off the server's port, which scopes too
// (Plan.exclByHolder), and the command still cannot end its holder.
func TestHolderKeepsItsCommandInReachWhileAServerRuns(t *testing.T) {
	t.Setenv(EnvServersDir, t.TempDir())
	release, err := RegisterServer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	holderKeepsItsCommandInReach(t, true)
}

func holderKeepsItsCommandInReach(t *testing.T, server bool) {
	dir := tree(t, "w/")
	p, err := Prepare(Request{Agent: "devloop-test", Sandbox: agents.Sandbox{Commands: agents.CommandsRequire, WriteAllowList: []string{"w/**"}},
		ProjectDir: dir, Mkdir: mkdirIn(dir), Hold: HoldCall})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Confined() || !p.Scoped {
		t.Skipf("needs Landlock with scoped signals: %s %v", p.Unconfined, p.NotEnforced)
	}
	if p.exclByHolder != server {
		t.Fatalf("the holder adds the servers' exclusion: %v, want %v (connect %s)", p.exclByHolder, server, p.Connect)
	}
	// Each thread of the holder whose memory the command can open (one
	// stays in the command's domain: the thread that forked it).
	script := `n=0; for t in /proc/$PPID/task/*; do (: < "$t/mem") 2>/dev/null && n=$((n+1)); done; echo mem=$n
kill -KILL $PPID 2>/dev/null; echo kill=$?
setsid sh -c 'trap "" TERM; echo job=$$ $(cut -d" " -f5 /proc/$$/stat); exec sleep 60' &
read line || true
`
	spec := p.Command("held", []string{"/bin/sh", "-c", script}, dir)
	c, pipes, err := procs.SpawnPiped(procs.Spawn, spec)
	p.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer pipes.Stdin.Close()
	out := bufio.NewReader(pipes.Stdout)
	read := func() string {
		l, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("output: %q %v", l, err)
		}
		return strings.TrimSpace(l)
	}
	if l := read(); l != "mem=0" {
		t.Fatalf("the command can open its holder's memory: %s", l)
	}
	if l := read(); l == "kill=0" {
		t.Fatalf("the command killed its holder: %s", l)
	}
	job := strings.Fields(strings.TrimPrefix(read(), "job="))
	if len(job) != 2 {
		t.Fatalf("job line: %v", job)
	}
	jobPID, _ := strconv.Atoi(job[0])
	if job[1] != strconv.Itoa(c.PGID) {
		t.Errorf("the setsid'd job is in group %s, want its holder's %d", job[1], c.PGID)
	}
	h, err := live.Running(dir)
	if err != nil || len(h) != 1 || h[0].PID != c.PID || !slices.Equal(h[0].Write, []string{"w"}) {
		t.Fatalf("while it runs: %+v %v, want the holder %d with write [w]", h, err, c.PID)
	}
	pipes.Stdin.Close() // the command ends; its job is left behind
	<-c.Done()
	if code, _, _ := c.Exit(); code != 0 {
		t.Errorf("holder exit %d, want the command's 0", code)
	}
	if err := syscall.Kill(jobPID, 0); err == nil {
		if st, err := procs.ReadStat(jobPID); err == nil && !st.Dead() {
			t.Errorf("the job %d outlived its holder", jobPID)
		}
	}
	if h, err := live.Running(dir); err != nil || len(h) != 0 {
		t.Fatalf("after the holder: %+v %v", h, err)
	}
	if ents, _ := os.ReadDir(dir + "/" + live.Dir); len(ents) != 0 {
		t.Errorf("registration files left: %v", ents)
	}
}

// TestHolderEndsAsItsCommandDid: a held command ended by a signal ends its
// holder by the same signal, so the bash tool and the units report it —
// also for the signals Go's runtime drops unless notified (SIGUSR1,
// SIGUSR2), which a holder that only reset its handler would survive and
// turn into an exit status.
func TestHolderEndsAsItsCommandDid(t *testing.T) {
	t.Parallel()
	dir := tree(t, "w/")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2} {
		p, err := Prepare(Request{Agent: "devloop-test", Sandbox: agents.Sandbox{Commands: agents.CommandsBestEffort, WriteAllowList: []string{"w/**"}},
			ProjectDir: dir, Mkdir: mkdirIn(dir), Hold: HoldCall})
		if err != nil {
			t.Fatal(err)
		}
		c, err := procs.Spawn(p.Command("held", []string{"/bin/sh", "-c", "kill -" + strconv.Itoa(int(sig)) + " $$"}, dir))
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		<-c.Done()
		if got := c.ExitSignal(); got != sig {
			code, _, _ := c.Exit()
			t.Errorf("command ended by %v: holder ended by %v (exit %d), want %v", sig, got, code, sig)
		}
	}
}

// TestCommandCannotLimitOrRescheduleOthers: a confined command, held or
// not, can set the resource limits, priority and scheduling of itself
// (setrlimit, nice, ionice, taskset and chrt running a command), and of no
// other process of its user: here a process of the same uid without
// capabilities (as the test's user without them: with them, the kernel's
// capability rules already refuse all but prlimit), whose soft
// RLIMIT_NOFILE and nice value it tries to change. Landlock does not see
// these calls; the seccomp filter does.
func TestCommandCannotLimitOrRescheduleOthers(t *testing.T) {
	t.Parallel()
	argv := []string{"/bin/sleep", "60"}
	if os.Geteuid() == 0 {
		argv = append([]string{"/usr/bin/setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"}, argv...)
	}
	victim, err := procs.Spawn(procs.Spec{Name: "victim", Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Stop(context.Background())
	pid := strconv.Itoa(victim.PID)
	state := func() string {
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		limits, _ := os.ReadFile("/proc/" + pid + "/limits")
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		for _, l := range strings.Split(string(limits), "\n") {
			if strings.HasPrefix(l, "Max open files") {
				return "nice " + f[16] + ", " + strings.Join(strings.Fields(l), " ")
			}
		}
		return "nice " + f[16]
	}
	// Once setpriv has exec'd sleep, without capabilities: before, the
	// kernel's capability rules would refuse the calls by themselves.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim %s did not exec sleep", pid)
		}
	}
	before := state()
	script := `for c in "prlimit --pid $1 --nofile=100:" "renice -n 7 -p $1" "taskset -p 1 $1" "ionice -c 3 -p $1" "chrt -i -p 0 $1"; do
	$c >/dev/null 2>&1 && echo "did: $c"
done
prlimit --nofile=64: sh -c 'echo nofile=$(ulimit -n)'
nice -n 5 true && ionice -c 3 true && taskset -c 0 true && chrt -i 0 true && echo self=ok`
	for _, hold := range []Hold{HoldNone, HoldCall} {
		dir := tree(t, "w/")
		p, err := Prepare(Request{Agent: "devloop-test", Sandbox: agents.Sandbox{Commands: agents.CommandsRequire, WriteAllowList: []string{"w/**"}},
			ProjectDir: dir, Mkdir: mkdirIn(dir), Hold: hold})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Confined() || !p.canFilter {
			p.Close()
			t.Skipf("needs Landlock and the seccomp filter: %s %v", p.Unconfined, p.NotEnforced)
		}
		c, pipes, err := procs.SpawnPiped(procs.Spawn, p.Command("limits", []string{"/bin/sh", "-c", script, "sh", pid}, dir))
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		pipes.Stdin.Close()
		out, _ := io.ReadAll(pipes.Stdout)
		<-c.Done()
		if got := strings.TrimSpace(string(out)); got != "nofile=64\nself=ok" {
			t.Errorf("hold %q: the command printed %q; want only nofile=64 and self=ok", hold, got)
		}
		if now := state(); now != before {
			t.Errorf("hold %q: the other process went from %q to %q", hold, before, now)
		}
	}
}
