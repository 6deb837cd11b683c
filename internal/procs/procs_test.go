package procs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logs opens a stdout and stderr file for a unit in dir.
func logs(t *testing.T, dir, unit string) (Log, Log) {
	t.Helper()
	open := func(name string) Log {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return Log{File: f}
	}
	return open(unit + ".out.log"), open(unit + ".err.log")
}

func shSpec(t *testing.T, dir, unit, script string) UnitSpec {
	t.Helper()
	out, errl := logs(t, dir, unit)
	return UnitSpec{Unit: unit, Argv: []string{"/bin/sh", "-c", script}, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}, Stdout: out, Stderr: errl}
}

// waitMembers waits until the group has at least n live processes.
func waitMembers(t *testing.T, pgid, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := GroupMembers(pgid)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) >= n {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %d has %d processes, want %d", pgid, len(m), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStopKillsWholeGroupIncludingStubbornChild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := NewManager(Options{Grace: 300 * time.Millisecond})
	defer m.Close()
	// The inner shell ignores SIGTERM and so does the sleep it runs.
	p, err := m.Start(shSpec(t, dir, "stubborn", `sh -c 'trap "" TERM; while :; do sleep 1; done' & wait`))
	if err != nil {
		t.Fatal(err)
	}
	waitMembers(t, p.PGID, 3)
	rep, err := m.Stop(context.Background(), "stubborn")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Signal != "SIGKILL" || len(rep.Killed) == 0 {
		t.Fatalf("report = %+v, want SIGKILL for the processes that ignored SIGTERM", rep)
	}
	if left, _ := GroupMembers(p.PGID); len(left) != 0 {
		t.Fatalf("processes %v of group %d survived stop", left, p.PGID)
	}
	exited, _, sig := p.Exit()
	if !exited || sig != "SIGTERM" || !p.Stopped() {
		t.Fatalf("exit = %v %q stopped=%v, want the leader ended by SIGTERM on request", exited, sig, p.Stopped())
	}
}

func TestExitCodeAndOnExit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		code   int
		stderr string
	}{
		{"crash with code 3", `echo "cannot open db" >&2; exit 3`, 3, "cannot open db\n"},
		{"clean exit", `echo hi`, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			m := NewManager(Options{})
			defer m.Close()
			var mu sync.Mutex
			var seen []int
			spec := shSpec(t, dir, "u", tt.script)
			spec.OnExit = func(p *Proc) {
				mu.Lock()
				defer mu.Unlock()
				_, code, _ := p.Exit()
				seen = append(seen, code)
			}
			p, err := m.Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			exited, code, sig := p.Exit()
			if !exited || code != tt.code || sig != "" || p.Stopped() {
				t.Fatalf("exit = %v code %d sig %q stopped %v, want code %d", exited, code, sig, p.Stopped(), tt.code)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "u.err.log"))
			if string(got) != tt.stderr {
				t.Fatalf("stderr log = %q, want %q", got, tt.stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || seen[0] != tt.code {
				t.Fatalf("OnExit calls = %v, want one with the exit code", seen)
			}
		})
	}
}

// TestSignalNames: a unit ended by a signal reports the signal's name, the
// same way for every signal (SIGHUP as much as SIGSEGV), not a description.
func TestSignalNames(t *testing.T) {
	t.Parallel()
	if signal.Ignored(syscall.SIGHUP) {
		// Started under nohup: a child inherits the ignored SIGHUP (as it
		// should), and `kill -HUP $$` would not end it. A signal this
		// process catches is reset to its default in a child at exec.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		t.Cleanup(func() { signal.Stop(hup) })
	}
	for _, sig := range []string{"HUP", "SEGV", "USR1"} {
		t.Run(sig, func(t *testing.T) {
			t.Parallel()
			m := NewManager(Options{})
			defer m.Close()
			p, err := m.Start(shSpec(t, t.TempDir(), "u", "kill -"+sig+" $$"))
			if err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			if exited, _, got := p.Exit(); !exited || got != "SIG"+sig {
				t.Fatalf("exit = %v signal %q, want SIG%s", exited, got, sig)
			}
		})
	}
}

func TestCloseStopsEveryUnitAndIsIdempotent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := NewManager(Options{Grace: time.Second})
	var procs []*Proc
	for _, u := range []string{"a", "b"} {
		p, err := m.Start(shSpec(t, dir, u, `sleep 1000 & wait`))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	if _, err := m.Start(shSpec(t, dir, "a", `sleep 1`)); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second start of a running unit = %v, want already running", err)
	}
	for _, p := range procs {
		waitMembers(t, p.PGID, 2)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if left, _ := GroupMembers(p.PGID); len(left) != 0 {
			t.Fatalf("unit %s: processes %v survived Close", p.Unit, left)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := m.Start(shSpec(t, dir, "c", `sleep 1`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close = %v, want ErrClosed", err)
	}
}

func TestAliveUsesStartTime(t *testing.T) {
	t.Parallel()
	self, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		pid   int
		ticks uint64
		want  bool
	}{
		{"same pid and start time", os.Getpid(), self.StartTicks, true},
		{"pid reused by another process", os.Getpid(), self.StartTicks + 1, false},
		{"no such pid", 1 << 30, 0, false},
		{"pid zero", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Alive(tt.pid, tt.ticks); got != tt.want {
				t.Fatalf("Alive(%d, %d) = %v, want %v", tt.pid, tt.ticks, got, tt.want)
			}
		})
	}
}

func TestStopGroupRefusesReusedGroupID(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	st, err := ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// A record of an older process that had this pid.
	g := Group{PGID: st.PID, LeaderPID: st.PID, LeaderTicks: st.StartTicks - 1}
	if _, err := StopGroup(context.Background(), g, time.Second); !errors.Is(err, ErrForeignGroup) {
		t.Fatalf("StopGroup on a reused pgid = %v, want ErrForeignGroup", err)
	}
	if !Alive(st.PID, st.StartTicks) {
		t.Fatal("the unrelated process was signalled")
	}
}

func TestRotateCopiesAndTruncates(t *testing.T) {
	t.Parallel()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "u.out.log"), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	big := bytes.Repeat([]byte("0123456789abcde\n"), 512) // 8 KiB
	if _, err := f.Write(big); err != nil {
		t.Fatal(err)
	}
	var backup []byte
	l := Log{File: f, Cap: 4096, Backup: func(b []byte) error { backup = append([]byte(nil), b...); return nil }}
	if err := rotate(l); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(backup, big) {
		t.Fatalf("backup has %d bytes, want the %d rotated", len(backup), len(big))
	}
	if _, err := f.WriteString("after\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(f.Name())
	if string(got) != "after\n" {
		t.Fatalf("log after rotation = %q, want only the new line", got)
	}
	backup = nil
	if err := rotate(l); err != nil || backup != nil {
		t.Fatalf("rotate under the cap: backup=%q err=%v, want nothing", backup, err)
	}
}

// BenchmarkStartStop measures starting a unit and stopping its group when
// it honours SIGTERM (the common case; a stubborn group adds the grace).
func BenchmarkStartStop(b *testing.B) {
	dir := b.TempDir()
	m := NewManager(Options{Grace: time.Second})
	defer m.Close()
	for b.Loop() {
		f, err := os.OpenFile(filepath.Join(dir, "out.log"), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		g, err := os.OpenFile(filepath.Join(dir, "err.log"), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Start(UnitSpec{Unit: "u", Argv: []string{"/bin/sleep", "1000"}, Dir: dir, Stdout: Log{File: f}, Stderr: Log{File: g}}); err != nil {
			b.Fatal(err)
		}
		rep, err := m.Stop(context.Background(), "u")
		if err != nil || rep.Signal != "SIGTERM" {
			b.Fatalf("stop = %+v, %v", rep, err)
		}
	}
}

func TestRunningUnitLogIsRotated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := NewManager(Options{RotateEvery: 10 * time.Millisecond})
	defer m.Close()
	spec := shSpec(t, dir, "chatty", `i=0; while [ $i -lt 300 ]; do echo "line $i 0123456789"; i=$((i+1)); done; echo done-writing; sleep 1000`)
	var mu sync.Mutex
	var backups [][]byte
	spec.Stdout.Cap = 1024
	spec.Stdout.Backup = func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		backups = append(backups, append([]byte(nil), b...))
		return nil
	}
	if _, err := m.Start(spec); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		fi, err := os.Stat(filepath.Join(dir, "chatty.out.log"))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		n := len(backups)
		mu.Unlock()
		if n > 0 && fi.Size() <= 1024 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log not rotated: %d backups, size %v", n, fi.Size())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.HasPrefix(backups[0], []byte("line 0 ")) {
		t.Fatalf("first backup starts with %q, want the first lines", backups[0][:min(20, len(backups[0]))])
	}
}

func TestStopReachesChildrenOfAnExitedLeader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := NewManager(Options{Grace: time.Second})
	defer m.Close()
	// The leader exits at once; its background child keeps the group.
	p, err := m.Start(shSpec(t, dir, "orphans", `sleep 1000 & echo started`))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	waitMembers(t, p.PGID, 1)
	rep, err := m.Stop(context.Background(), "orphans")
	if err != nil || rep.Signal != "SIGTERM" || len(rep.Members) != 1 {
		t.Fatalf("stop = %+v, %v; want the leftover child terminated", rep, err)
	}
	if left, _ := GroupMembers(p.PGID); len(left) != 0 {
		t.Fatalf("processes %v survived", left)
	}
}

// A unit that exited by itself (a crash) keeps that fact when stop is
// called afterwards: Stopped stays false and the exit code stays its own,
// so spawn_units reports "exited" with the code, not "stopped on request".
func TestStopAfterOwnExitKeepsTheExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := NewManager(Options{Grace: time.Second})
	defer m.Close()
	p, err := m.Start(shSpec(t, dir, "crash", `exit 3`))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if _, err := m.Stop(context.Background(), "crash"); err != nil {
		t.Fatal(err)
	}
	exited, code, sig := p.Exit()
	if !exited || code != 3 || sig != "" || p.Stopped() {
		t.Fatalf("exit = %v %d %q stopped=%v; want its own exit 3, not stopped on request", exited, code, sig, p.Stopped())
	}
}
