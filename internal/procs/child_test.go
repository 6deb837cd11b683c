package procs_test

import (
	"bufio"
	"errors"
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
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/procs"
)

// pidsFrom starts spec with a stdout pipe and reads n pids, one a line.
func pidsFrom(t *testing.T, spawn func(procs.Spec) (*procs.Child, error), spec procs.Spec, n int) (*procs.Child, []procs.Process) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spec.Stdout = w
	c, err := spawn(spec)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(r)
	var out []procs.Process
	for len(out) < n && sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		st, err := procs.ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, procs.Process{PID: pid, StartTicks: st.StartTicks})
	}
	if len(out) != n {
		t.Fatalf("read %d pids, want %d", len(out), n)
	}
	return c, out
}

func gone(t *testing.T, within time.Duration, ps ...procs.Process) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var left []int
		for _, p := range ps {
			if procs.Alive(p.PID, p.StartTicks) {
				left = append(left, p.PID)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still run after %v", left, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSpawnStopsWhatTheLeaderLeft: a job the leader leaves in its group is
// stopped when the leader exits, escalating to SIGKILL after the grace.
func TestSpawnStopsWhatTheLeaderLeft(t *testing.T) {
	t.Parallel()
	spec := procs.Spec{Name: "sh", Argv: []string{"/bin/sh", "-c", `sleep 300 & echo $!; sh -c 'trap "" TERM; echo $$; exec sleep 300' & sleep 0.2`},
		Grace: 200 * time.Millisecond}
	c, jobs := pidsFrom(t, procs.Spawn, spec, 2)
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the leader exited")
	}
	gone(t, 0, jobs...)
	if code, sig, err := c.Exit(); code != 0 || sig != "" || err != nil {
		t.Fatalf("exit %d %q %v, want 0", code, sig, err)
	}
}

// TestSpawnConfined: the child starts inside the ruleset Confine applied on
// the forking thread; toolhost's own threads stay free.
func TestSpawnConfined(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	plan, err := confine.Prepare(confine.Request{Agent: "t", ProjectDir: dir,
		Sandbox: agents.Sandbox{WriteAllowList: []string{"in/**"}, Commands: agents.CommandsRequire}})
	var ue *confine.UnavailableError
	if errors.As(err, &ue) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	c, err := procs.Spawn(procs.Spec{Name: "sh", Argv: []string{"/bin/sh", "-c", "echo > in/x; echo > out; exit 0"}, Dir: dir, Confine: plan.Restrict})
	if err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if _, err := os.Stat(filepath.Join(dir, "in/x")); err != nil {
		t.Errorf("the allowed write failed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("the confined child wrote outside its root")
	}
	// Many spawns later, no thread of this process is confined.
	for range 20 {
		c, err := procs.Spawn(procs.Spec{Name: "true", Argv: []string{"/bin/true"}, Confine: plan.Restrict})
		if err != nil {
			t.Fatal(err)
		}
		<-c.Done()
	}
	if err := os.WriteFile(filepath.Join(dir, "parent"), nil, 0o644); err != nil {
		t.Fatalf("the parent became confined: %v", err)
	}
}

func TestSpawnConfineFailureStartsNothing(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	_, err := procs.Spawn(procs.Spec{Name: "sh", Argv: []string{"/bin/sh", "-c", "touch " + marker},
		Confine: func() error { return errors.New("no ruleset") }})
	if err == nil || !strings.Contains(err.Error(), "confine: no ruleset") {
		t.Fatalf("err = %v, want the confine error", err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although it could not be confined")
	}
}

// TestWardenStopsGroupsOfAKilledOwner: a process that owns children through
// a Manager is killed with SIGKILL; its warden stops what it started, the
// stubborn part included (SIGTERM, WardenGrace, SIGKILL). The owner is
// killed as soon as it started the warden, whose own start (a race build
// of this test binary) is then part of the time; the 2-second bound for the
// real binary is checked by e2e's TestSIGKILLLeavesNothing.
func TestWardenStopsGroupsOfAKilledOwner(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWardenHelper$")
	cmd.Env = append(os.Environ(), "PROCS_WARDEN_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var victims []procs.Process
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			break
		}
		var p procs.Process
		if _, err := fmt.Sscan(line, &p.PID, &p.StartTicks); err == nil {
			victims = append(victims, p)
		}
	}
	if len(victims) != 3 {
		t.Fatalf("helper reported %v, want the warden and two children", victims)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	gone(t, 2*time.Second+procs.WardenGrace+time.Second, victims...)
}

// TestWardenHelper is the owner TestWardenStopsGroupsOfAKilledOwner kills.
func TestWardenHelper(t *testing.T) {
	if os.Getenv("PROCS_WARDEN_HELPER") != "1" {
		t.Skip("helper process")
	}
	m := procs.NewManager(procs.Options{Warden: true, Grace: time.Minute})
	spec := procs.Spec{Name: "sh", Argv: []string{"/bin/sh", "-c", `sh -c 'trap "" TERM; echo $$; exec sleep 300' & echo $!; sleep 300`}}
	c, kids := pidsFrom(t, m.Spawn, spec, 1)
	w := m.WardenPID()
	st, err := procs.ReadStat(w)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%d %d\n%d %d\n%d %d\nready\n", w, st.StartTicks, c.PID, c.StartTicks, kids[0].PID, kids[0].StartTicks)
	select {}
}
